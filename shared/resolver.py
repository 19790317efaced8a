"""The plan decides (SPEC 3.1): pick the engine that trains a plan, or refuse it with the
sentence users see. `startable_runs` lists, from the same declarations, every combination a
model can start, so `base-models get MODEL` and the resolver never disagree.
"""

from __future__ import annotations

from typing import Any

from shared import reasons
from shared.config import Pool
from shared.engines import ENGINES, RESTORE_NONE, EngineSpec
from shared.errors import Unprocessable


def _restore_kind(plan: dict[str, Any]) -> str:
    restore = plan.get("restore")
    return restore["what"] if restore else RESTORE_NONE


def _kl(plan: dict[str, Any]) -> bool:
    grpo = plan.get("grpo") or {}
    return plan["method"] == "grpo" and (grpo.get("klPenalty") or 0) > 0


def _device_kinds(pool: Pool, gpus: int) -> set[str]:
    return {n.device_kind for n in pool.nodes if n.device_count >= gpus}


def resolve(plan: dict[str, Any], *, model: dict[str, Any], pool: Pool) -> EngineSpec:
    """Return the engine that trains `plan` on `model` in `pool`, or raise Unprocessable (422)."""
    gpus = plan["execution"]["gpus"]
    precision = plan["precision"]
    if gpus > pool.largest_node_gpus:
        raise Unprocessable(
            reasons.gpus_exceed_every_node(gpus=gpus, pool=pool.name, largest_node_gpus=pool.largest_node_gpus),
            details={"field": "execution.gpus"},
        )
    if precision not in model["precisions"]:
        raise Unprocessable(
            reasons.precision_unsupported(precision=precision, model=model["id"], supported=model["precisions"]),
            details={"field": "precision"},
        )
    kinds = _device_kinds(pool, gpus)
    for spec in ENGINES:
        if gpus not in model["gpuCounts"] or model["modality"] not in spec.modalities:
            continue
        if any(
            spec.trains(method=plan["method"], gpus=gpus, precision=precision, kl=_kl(plan),
                        restore=_restore_kind(plan), device_kind=kind)
            for kind in kinds
        ):
            return spec
    raise Unprocessable(
        reasons.engine_refused(
            method=plan["method"],
            kl_penalty=1.0 if _kl(plan) else 0.0,
            restores_weights=_restore_kind(plan) == "weights",
            gpus=gpus,
        ),
        details={"method": plan["method"], "gpus": gpus, "restore": _restore_kind(plan)},
    )


def startable_runs(model: dict[str, Any], pools: list[Pool]) -> list[dict[str, Any]]:
    """Every (method, GPU count, precision, KL penalty, restore) some engine trains for `model`
    on some node of these pools, with the engine that would train it."""
    rows = []
    for spec in ENGINES:
        if model["modality"] not in spec.modalities:
            continue
        for gpus in spec.gpu_counts:
            if gpus not in model["gpuCounts"]:
                continue
            kinds = set().union(*(_device_kinds(p, gpus) for p in pools)) if pools else set()
            for precision in sorted(spec.precisions & set(model["precisions"])):
                if not any(spec.trains(method=spec.method, gpus=gpus, precision=precision, kl=False,
                                       restore=RESTORE_NONE, device_kind=k) for k in kinds):
                    continue
                for kl in ((False, True) if spec.kl_penalty else (False,)):
                    for restore in spec.restores:
                        rows.append({"method": spec.method, "gpus": gpus, "precision": precision,
                                     "klPenalty": kl, "restore": restore, "engine": spec.name})
    return rows
