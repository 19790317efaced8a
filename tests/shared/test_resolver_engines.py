"""What the engines declare (shared/engines.py) and what the resolver accepts agree, GPU counts
and restores included."""

from __future__ import annotations

import pytest

from shared import reasons
from shared.config import Node, Pool
from shared.engines import ENGINES, engine
from shared.errors import Unprocessable
from shared.resolver import resolve, startable_runs

TINY = {"id": "builtin/tiny-qwen3", "parameters": 100_000, "precisions": ["fp32", "bf16"],
        "gpuCounts": [1, 2], "modality": "text"}
CPU_POOL = Pool("default", (Node("local", "cpu", 2),))
BIG_POOL = Pool("big", (Node("gpu-node", "cuda", 8),))


def plan(gpus=1, restore=None, precision="fp32"):
    return {"method": "sft", "precision": precision, "execution": {"gpus": gpus},
            **({"restore": {"snapshot": "snap-x", "what": restore}} if restore else {})}


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
    assert {(r["gpus"], r["engine"]) for r in rows} == {(1, "sft-single"), (2, "sft-ddp")}
    assert {r["restore"] for r in rows} == {"none", "weights", "trainingState"}
    for row in rows:
        chosen = resolve(plan(row["gpus"], None if row["restore"] == "none" else row["restore"], row["precision"]),
                         model=TINY, pool=CPU_POOL)
        assert chosen.name == row["engine"]


def test_a_model_declared_for_fewer_gpus_is_refused_more():
    with pytest.raises(Unprocessable) as refused:
        resolve(plan(4, "weights"), model=TINY, pool=BIG_POOL)
    assert refused.value.message == reasons.engine_refused(method="sft", kl_penalty=0, restores_weights=True, gpus=4)
    assert refused.value.message == "this deployment does not train sft over an inherited adapter on 4 GPU(s)"
    eight = {**TINY, "gpuCounts": [1, 2, 4, 8]}
    assert resolve(plan(8, "trainingState"), model=eight, pool=BIG_POOL).name == "sft-ddp"
    assert {r["gpus"] for r in startable_runs(eight, [BIG_POOL])} == {1, 2, 4, 8}
