"""The plan decides how a run trains: whole copies (one GPU, DDP) when the memory estimate fits a
GPU, the sharded engine (sft-fsdp) when only shards fit, a plain refusal when neither does."""

from __future__ import annotations

import pytest

from shared import reasons
from shared.config import Node, Pool, parse_config
from shared.errors import Unprocessable
from shared.resolver import resolve, startable_runs, training_memory_gib
from tests.shared.plan_fixtures import typed

GEMMA_12B = {"id": "google/gemma-4-12b", "parameters": 12_000_000_000, "precisions": ["bf16", "fp32"],
             "gpuCounts": [1, 2, 4, 8], "modality": "text"}
TINY = {"id": "builtin/tiny-qwen3", "parameters": 93_000, "hiddenSize": 64, "layers": 2, "vocabSize": 512,
        "precisions": ["fp32"], "gpuCounts": [1, 2], "modality": "text"}


def plan(gpus, precision="fp32", method="sft", **hyper):
    p = {"method": method, "precision": precision, "execution": {"gpus": gpus},
         "adapter": {"rank": 8, "targetModules": "all-linear"},
         "hyperparameters": {"batchSize": 8, "gradientAccumulation": 1, "maxSeqLength": 512, **hyper}}
    if method == "grpo":
        p["grpo"] = {"klPenalty": 0.0}
    return typed(p)


def pool(memory_gib, count=4, kind="cuda"):
    return Pool("p", (Node("n", kind, count, memory_gib),))


def test_a_12b_model_in_fp32_trains_sharded_on_48_gib_gpus_and_whole_on_141():
    whole, sharded = (training_memory_gib(plan(2), model=GEMMA_12B, sharded=s) for s in (False, True))
    assert sharded < 48 < whole  # 44.7 GiB of fp32 weights alone, whole; about half of it per GPU sharded
    assert resolve(plan(2), model=GEMMA_12B, pool=pool(48)).name == "sft-fsdp"
    assert resolve(plan(4), model=GEMMA_12B, pool=pool(48)).name == "sft-fsdp"
    assert resolve(plan(2), model=GEMMA_12B, pool=pool(141)).name == "sft-ddp"
    assert resolve(plan(2), model=GEMMA_12B, pool=Pool("p", (Node("n", "cuda", 4, None),))).name == "sft-ddp"


def test_neither_fitting_is_refused_with_what_the_sharded_engine_would_need():
    needs = training_memory_gib(plan(2), model=GEMMA_12B, sharded=True)
    with pytest.raises(Unprocessable) as refused:
        resolve(plan(2), model=GEMMA_12B, pool=pool(16))
    assert refused.value.message == reasons.memory_exceeded(
        model="google/gemma-4-12b", needs_gib=needs, precision="fp32", pool="p", has_gib=16.0)
    assert refused.value.message == (f"model google/gemma-4-12b needs about {needs:.1f} GiB per GPU to train in "
                                     "fp32 with this adapter, and the nodes of pool p have 16.0 GiB per GPU")


def test_one_gpu_and_grpo_have_no_sharded_engine_and_are_refused_with_the_whole_estimate():
    for refused_plan in (plan(1), plan(2, method="grpo")):
        needs = training_memory_gib(refused_plan, model=GEMMA_12B)
        with pytest.raises(Unprocessable) as refused:
            resolve(refused_plan, model=GEMMA_12B, pool=pool(40))
        assert refused.value.message == reasons.memory_exceeded(
            model="google/gemma-4-12b", needs_gib=needs, precision="fp32", pool="p", has_gib=40.0)


def test_base_models_get_lists_which_engine_each_gpu_count_gets():
    rows = [r for r in startable_runs(GEMMA_12B, [pool(48, count=8)])
            if r["method"] == "sft" and r["precision"] == "fp32" and r["restore"] == "none"]
    assert {r["gpus"]: r["engine"] for r in rows} == {2: "sft-fsdp", 4: "sft-fsdp", 8: "sft-fsdp"}
    rows = [r for r in startable_runs(GEMMA_12B, [pool(48, count=8)])
            if r["method"] == "sft" and r["precision"] == "bf16" and r["restore"] == "none"]
    assert {r["gpus"]: r["engine"] for r in rows} == {1: "sft-single", 2: "sft-ddp", 4: "sft-ddp", 8: "sft-ddp"}


def test_cpu_slots_declared_small_enough_pick_the_sharded_engine_for_the_tiny_model():
    """How CPU tests reach sft-fsdp through the resolver: a node whose slots declare a memory
    between the tiny model's sharded and whole estimates (real selection, no switch)."""
    whole, sharded = (training_memory_gib(plan(2), model=TINY, sharded=s, device="cpu") for s in (False, True))
    between = round((whole + sharded) / 2, 6)
    config = parse_config({"pools": {"small": {"nodes": [
        {"name": "cpu-node", "devices": {"kind": "cpu", "count": 2, "memoryGiB": between}}]}}})
    small = config.pool("small")
    assert small.nodes[0].memory_gib == between
    assert resolve(plan(2), model=TINY, pool=small).name == "sft-fsdp"
    one = training_memory_gib(plan(1), model=TINY, device="cpu")  # the whole batch on one slot: more activations
    assert one > between
    with pytest.raises(Unprocessable) as refused:
        resolve(plan(1), model=TINY, pool=small)
    assert refused.value.message == reasons.memory_exceeded(
        model="builtin/tiny-qwen3", needs_gib=one, precision="fp32", pool="small", has_gib=between)
