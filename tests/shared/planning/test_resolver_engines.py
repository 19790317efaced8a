"""What the engines declare (shared/planning/engines.py) and what the resolver accepts agree, GPU counts
and restores included."""

from __future__ import annotations

import pytest

from shared import reasons
from shared.config.deployment import Node, Pool
from shared.errors import Unprocessable
from shared.planning.engines import ENGINES, engine
from shared.planning.resolver import resolve, startable_runs
from tests.shared.plans.plan_fixtures import typed

TINY = {"id": "builtin/tiny-qwen3", "parameters": 100_000, "precisions": ["fp32", "bf16"],
        "gpuCounts": [1, 2], "modality": "text"}
CPU_POOL = Pool("default", (Node("local", "cpu", 2),))
BIG_POOL = Pool("big", (Node("gpu-node", "cuda", 8),))


def plan(gpus=1, restore=None, precision="fp32", method="sft", kl=0.0):
    return typed({"method": method, "precision": precision, "execution": {"gpus": gpus},
                  **({"grpo": {"klPenalty": kl}} if method == "grpo" else {}),
                  **({"restore": {"snapshot": "snap-x", "what": restore}} if restore else {})})


def row_plan(row):
    return plan(row["gpus"], None if row["restore"] == "none" else row["restore"], row["precision"],
                method=row["method"], kl=0.05 if row["klPenalty"] else 0.0)


def test_declarations():
    assert engine("sft-single").gpu_counts == (1,) and engine("sft-ddp").gpu_counts == (2, 4, 8)
    for spec in ENGINES:
        assert spec.restores == ("none", "weights", "trainingState")


@pytest.mark.parametrize("gpus, name", [(1, "sft-single"), (2, "sft-ddp")])
@pytest.mark.parametrize("restore", [None, "weights", "trainingState"])
def test_every_startable_run_of_the_tiny_model_resolves_to_its_engine(gpus, name, restore):
    assert resolve(plan(gpus, restore), model=TINY, pool=CPU_POOL).name == name


def test_startable_runs_list_exactly_what_resolves():
    rows = startable_runs(TINY, [CPU_POOL])
    assert {(r["gpus"], r["engine"]) for r in rows} == {(1, "sft-single"), (2, "sft-ddp"), (1, "grpo-single"),
                                                        (2, "grpo-ddp")}
    assert {r["restore"] for r in rows} == {"none", "weights", "trainingState"}
    for row in rows:
        assert resolve(row_plan(row), model=TINY, pool=CPU_POOL).name == row["engine"]


def test_grpo_combinations_listed_are_accepted_and_the_rest_refused_with_the_spec_sentence():
    """base-models get lists every grpo combination the resolver accepts, and only those."""
    four = {**TINY, "gpuCounts": [1, 2, 3, 4]}
    rows = [r for r in startable_runs(four, [BIG_POOL]) if r["method"] == "grpo"]
    listed = {(r["gpus"], r["precision"], r["klPenalty"], r["restore"]) for r in rows}
    assert listed == {(gpus, p, kl, restore) for gpus in (1, 2, 4) for p in ("bf16", "fp32") for kl in (False, True)
                      for restore in ("none", "weights", "trainingState")}
    for row in rows:
        assert resolve(row_plan(row), model=four, pool=BIG_POOL).name == ("grpo-single" if row["gpus"] == 1
                                                                          else "grpo-ddp")
    for gpus in (3,):  # no engine trains on 3 GPUs
        for kl in (0.0, 0.1):
            for restore in (None, "weights", "trainingState"):
                assert (gpus, "fp32", kl > 0, restore or "none") not in listed
                with pytest.raises(Unprocessable) as refused:
                    resolve(plan(gpus, restore, method="grpo", kl=kl), model=four, pool=BIG_POOL)
                assert refused.value.status == 422
                assert refused.value.message == reasons.engine_refused(
                    method="grpo", kl_penalty=kl, restores_weights=restore == "weights", gpus=gpus)
    with pytest.raises(Unprocessable) as refused:
        resolve(plan(3, "weights", method="grpo", kl=0.1), model=four, pool=BIG_POOL)
    assert refused.value.message == "this deployment does not train grpo with a KL penalty over an inherited adapter on 3 GPU(s)"


def test_a_model_declared_for_fewer_gpus_is_refused_more():
    with pytest.raises(Unprocessable) as refused:
        resolve(plan(4, "weights"), model=TINY, pool=BIG_POOL)
    assert refused.value.message == reasons.engine_refused(method="sft", kl_penalty=0, restores_weights=True, gpus=4)
    assert refused.value.message == "this deployment does not train sft over an inherited adapter on 4 GPU(s)"
    eight = {**TINY, "gpuCounts": [1, 2, 4, 8]}
    assert resolve(plan(8, "trainingState"), model=eight, pool=BIG_POOL).name == "sft-ddp"
    assert {r["gpus"] for r in startable_runs(eight, [BIG_POOL])} == {1, 2, 4, 8}
