"""Evaluations: check the request, store the evaluation, queue its claim; cancel it; read its
per-row results (SPEC 2.5, 7). An evaluation claims GPUs like a run and is carried out by the
node's trainer worker (services/trainer_worker/evaluation_job.py)."""

from __future__ import annotations

from typing import Any, BinaryIO

from services.api.auth import Principal, require_workload, visible
from services.api.branches import readable_of, require_intact
from services.api.claims import queue_for_devices, reserve_places
from services.api.context import Context
from services.api.datasets import visible_dataset
from shared import reasons
from shared.artifacts import UnsafeKey
from shared.claims.fits import pool_named, refuse_never_granted
from shared.config import DEFAULT_WORKLOADS
from shared.datasets import TEXT
from shared.errors import Conflict, NotFound, Unprocessable, ValidationFailed
from shared.evaluation_schema import parse_evaluation
from shared.ids import Kind, new_id
from shared.judges import accept_judge, find_judge
from shared.lifecycle.evaluations import EVALUATIONS
from shared.resolver import refuse_the_dataset_modality
from shared.model_facts import refuse_unusable
from shared.rewards import check_rewards
from shared.states import EvaluationStatus


def visible_snapshot(context: Context, snapshot_id: str, who: Principal, field: str) -> dict[str, Any]:
    doc = context.store.get(snapshot_id)
    if doc is None or doc.get("kind") != "snapshot" or not who.may_use(doc.get("workload", "")):
        raise NotFound(reasons.evaluated_snapshot_unknown(snapshot_id), details={"field": field, "id": snapshot_id})
    return doc


def check_evaluation(context: Context, *, body: Any, who: Principal,
                     checked_snapshot: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every refusal of an evaluation request, with nothing written: the evaluation document to
    store (its id drawn) and the claim queue that checked it, for `store_evaluation`."""
    spec = parse_evaluation(body)
    workload = require_workload(spec["workload"] or who.default_workload(DEFAULT_WORKLOADS["evaluation"]))
    # 404 when not in the catalog, 400 when not in the hub cache
    model = context.catalog.describe(context.catalog.check_loadable(spec["model"]))
    dataset = visible_dataset(context, spec["dataset"], who)
    # 422: images for a text model, none for an image-text model (as a run is refused)
    refuse_the_dataset_modality(dataset["id"], model, dataset.get("modality") or TEXT, evaluated=True)
    refuse_unusable(model, dataset=dataset["id"], dataset_format=dataset.get("format"))  # 422
    pool_name = spec["pool"] or context.config.default_pool
    pool = pool_named(context.config, pool_name, field="pool")  # 404
    snap = checked_snapshot
    if spec["snapshot"] and snap is None:
        snap = visible_snapshot(context, spec["snapshot"], who, "snapshot")
        if not readable_of(snap)["weights"]:
            raise Unprocessable(reasons.evaluation_snapshot_unreadable(snap["id"]), details={"field": "snapshot"})
        if snap.get("model") and snap["model"] != spec["model"]:
            raise Unprocessable(reasons.evaluation_other_model(snapshot_id=snap["id"], snapshot_model=snap["model"],
                                                               model=spec["model"]), details={"field": "snapshot"})
        require_intact(context, snap, "weights", field="snapshot")  # not after it got GPUs
    judge_workloads: dict[str, str] = {}
    if spec["judge"]:  # its id, or a live endpoint's name, found and refused as a grpo run's judges are
        found = find_judge(context.store, spec["judge"], workloads=who.name_scope)
        judge_workloads[spec["judge"]] = accept_judge(found, spec["judge"], field="judge")
    try:
        check_rewards(spec["rewards"] or [], registered=getattr(context.config, "reward_functions", None),
                      field_prefix="rewards")
    except ValidationFailed as exc:  # said as the other evaluation fields are; details.field stays the path
        raise ValidationFailed(reasons.evaluation_reward_refused(exc.message), details=exc.details) from None
    refuse_never_granted(pool, kind="evaluation", gpus=spec["gpus"], workload=workload)  # 422
    claims = context.claims(checked=True)
    doc = {
        "id": new_id(Kind.EVALUATION), "kind": "evaluation", "workload": workload,
        **EVALUATIONS.created(), "detail": None,
        "model": spec["model"], "snapshot": spec["snapshot"],
        "run": (snap or {}).get("run"), "step": (snap or {}).get("step"),
        "dataset": dataset["id"], "datasetDigest": dataset["digest"], "datasetFormat": dataset["format"],
        "gpus": spec["gpus"], "pool": pool_name, "judge": spec["judge"],
        "judgeWorkloads": judge_workloads, "rewards": spec["rewards"],
        "maxTokens": spec["maxTokens"], "maxTokensUsed": None, "maxTokensFrom": None, "longestReferenceTokens": None,
        "comparison": None,
        "progress": {"rows": 0, "totalRows": dataset.get("rows")},
        "metrics": None, "results": None,
        "cancelRequested": False, "attempts": 0, "startedAt": None, "finishedAt": None,
        "scheduling": {"claim": None, "pool": pool_name, "node": None, "devices": [], "position": None},
    }
    return {"doc": doc, "claims": claims}


def store_evaluation(context: Context, checked: dict[str, Any], *, claim_id: str,
                     comparison: str | None = None) -> dict[str, Any]:
    """Store an evaluation `check_evaluation` accepted, QUEUED, and queue its claim under
    `claim_id` (a place reserve_places gave)."""
    doc = context.store.create({**checked["doc"], "comparison": comparison})
    return queue_for_devices(context, doc, kind="evaluation", claims=checked["claims"], model=doc["model"],
                             claim_id=claim_id, event=reasons.claim_queued(
                                 pool=doc["pool"], gpus=doc["gpus"], device_kind=context.config.pools[doc["pool"]].device_kind))


def create_evaluation(context: Context, *, body: Any, who: Principal) -> dict[str, Any]:
    """Store a QUEUED evaluation and queue its claim; every refusal happens before anything is stored."""
    checked = check_evaluation(context, body=body, who=who)
    (claim_id,) = reserve_places(context, workload=checked["doc"]["workload"])  # 429 past the workload's cap
    return store_evaluation(context, checked, claim_id=claim_id)


def get_evaluation(context: Context, evaluation_id: str) -> dict[str, Any]:
    doc = context.store.get(evaluation_id)
    return visible(doc if doc and doc.get("kind") == "evaluation" else None, "evaluation", evaluation_id)


def cancel_evaluation(context: Context, evaluation_id: str) -> dict[str, Any]:
    """QUEUED: cancelled at once, its claim released. STARTING/RUNNING: the worker stops between
    rows and ends it CANCELLED."""
    get_evaluation(context, evaluation_id)
    return _cancel(context, evaluation_id, detail=reasons.CANCELLED_WHILE_QUEUED, by="the user")


def withdraw_evaluation(context: Context, evaluation_id: str, *, detail: str) -> dict[str, Any]:
    """Cancel an evaluation the API itself queued moments ago (a comparison that could not queue
    all of its evaluations), its claim released; one that has ended is left as it is."""
    try:
        return _cancel(context, evaluation_id, detail=detail, by="the API")
    except Conflict:
        return context.store.require(evaluation_id, "evaluation")


def _cancel(context: Context, evaluation_id: str, *, detail: str, by: str) -> dict[str, Any]:
    released: list[str] = []

    def cancel(doc: dict[str, Any]) -> dict[str, Any]:
        status = EvaluationStatus(doc["status"])
        if status.is_terminal:
            raise Conflict(reasons.evaluation_ended(evaluation_id, status), details={"status": status})
        if status == EvaluationStatus.QUEUED:
            EVALUATIONS.apply(doc, EvaluationStatus.CANCELLED, detail=detail)
            released.append((doc.get("scheduling") or {}).get("claim"))
        else:
            doc["cancelRequested"] = True
        return doc

    doc = context.store.update(evaluation_id, cancel)
    for claim_id in filter(None, released):
        context.claims().release(claim_id)
    context.store.add_event(evaluation_id, reasons.evaluation_cancel_event(by, ended=doc["status"] == "CANCELLED"))
    return doc


def evaluation_rows(context: Context, evaluation_id: str) -> BinaryIO:
    """The per-row results file of a SUCCEEDED evaluation, opened (409 before that)."""
    doc = get_evaluation(context, evaluation_id)
    if doc["status"] != EvaluationStatus.SUCCEEDED or not doc.get("results"):
        raise Conflict(reasons.evaluation_rows_not_ready(evaluation_id, doc["status"]),
                       details={"status": doc["status"]})
    try:
        return context.artifacts.open(doc["results"]["path"])
    except (FileNotFoundError, IsADirectoryError, UnsafeKey):
        raise NotFound(reasons.evaluation_rows_missing(evaluation_id),
                       details={"path": doc["results"]["path"]}) from None
