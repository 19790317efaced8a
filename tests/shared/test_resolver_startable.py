"""SPEC 2.1: what `base-models get MODEL` lists as startable and what the resolver accepts can never
disagree. For every model and pool, every plan a row lists is accepted there by `resolve` with the
row's engine, and every plan the list leaves out (or lists for other pools only) is refused, memory
fit included. The plans are made the way POST /v1/runs makes them (`parse_plan`), so the defaults
the list assumes are the defaults a submitted plan gets."""

from __future__ import annotations

from itertools import product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared import reasons
from shared.artifacts import ArtifactRoot
from shared.catalog import Catalog
from shared.config import Node, Pool
from shared.engines import engine
from shared.errors import Unprocessable
from shared.plans import PRECISIONS, TrainingPlan, read_plan
from shared.resolver import admitted_device, resolve, startable_assumptions, startable_runs, training_memory_gib
from tests.conftest import make_config

# Wider than anything declared: GPU counts no engine or model has, every precision the plan allows.
GPU_COUNTS = range(1, 10)
KL_PENALTIES = (0.0, 0.1)
RESTORES = (None, "weights", "trainingState")


def _submitted(method: str, gpus: int, precision: str, kl: float, restore: str | None) -> TrainingPlan:
    body = {"method": method, "model": "any", "dataset": "ds-any", "precision": precision, "execution": {"gpus": gpus}}
    if method == "grpo":
        body["grpo"] = {"klPenalty": kl}
    if restore:
        body["restore"] = {"snapshot": "snap-any", "what": restore}
    return read_plan(body)[0]


# Every plan a user could submit that differs only in what a row of the list names; an sft plan
# carries no KL penalty (grpo settings on an sft plan are refused with 400).
PLANS = {
    (method, gpus, precision, kl > 0, restore or "none"): _submitted(method, gpus, precision, kl, restore)
    for method, gpus, precision, kl, restore in product(("sft", "grpo"), GPU_COUNTS, PRECISIONS, KL_PENALTIES,
                                                        RESTORES)
    if method == "grpo" or kl == 0
}


def _engine_or_refusal(plan: TrainingPlan, model: dict, pool: Pool) -> str | Unprocessable:
    try:
        return resolve(plan, model=model, pool=pool).name
    except Unprocessable as refused:
        return refused


def assert_list_and_resolver_agree(model: dict, pools: list[Pool]) -> list[dict]:
    rows = startable_runs(model, pools)
    listed = {}
    for row in rows:
        key = (row["method"], row["gpus"], row["precision"], row["klPenalty"], row["restore"])
        assert row["pools"], row
        for pool_name in row["pools"]:
            assert (key, pool_name) not in listed, f"{key} listed twice for pool {pool_name}"
            listed[key, pool_name] = row["engine"]
        by_name = {pool.name: pool for pool in pools}
        kinds = {admitted_device(PLANS[key], by_name[name]) for name in row["pools"]}
        needs = training_memory_gib(PLANS[key], model=model, sharded=engine(row["engine"]).shards_weights,
                                    device="cuda" if "cuda" in kinds else "cpu")
        assert row["memoryGiB"] == (None if needs is None else round(needs, 1))
    for (key, plan), pool in product(PLANS.items(), pools):
        answer = _engine_or_refusal(plan, model, pool)
        if (key, pool.name) in listed:
            assert answer == listed[key, pool.name], f"{model['id']} {key} in {pool.name}: listed, then {answer}"
        else:
            assert isinstance(answer, Unprocessable), f"{model['id']} {key} in {pool.name}: not listed, yet accepted"
            assert answer.status == 422
    return rows


def test_the_assumed_plan_is_what_a_submitted_plan_gets_by_default():
    plan = _submitted("sft", 1, "fp32", 0.0, None).to_dict()
    assert startable_assumptions() == {
        "adapter": {k: plan["adapter"][k] for k in ("rank", "targetModules")},
        "hyperparameters": {k: plan["hyperparameters"][k] for k in ("batchSize", "gradientAccumulation",
                                                                    "maxSeqLength")},
    }
    assert startable_assumptions() == {"adapter": {"rank": 8, "targetModules": "all-linear"},
                                       "hyperparameters": {"batchSize": 8, "gradientAccumulation": 1,
                                                           "maxSeqLength": 512}}


# The test catalog (tests/conftest.py) and a 32B entry, over its two CPU pools (memory unknown: never
# refused for memory) and GPU pools that declare memory: one too small for an 8B model, one that
# fits it on up to 2 GPUs, one whose nodes differ (a 141 GiB GPU alone, eight 24 GiB ones).
GPU_POOLS = {
    "gpu16": {"nodes": [{"name": "g16", "devices": {"kind": "cuda", "count": 8, "memoryGiB": 16}}]},
    "gpu80": {"nodes": [{"name": "g80", "devices": {"kind": "cuda", "count": 2, "memoryGiB": 80}}]},
    "mixed": {"nodes": [{"name": "wide", "devices": {"kind": "cuda", "count": 1, "memoryGiB": 141}},
                        {"name": "many", "devices": {"kind": "cuda", "count": 8, "memoryGiB": 24}}]},
}
QWEN3_32B = {"id": "Qwen/Qwen3-32B", "path": "/nonexistent/qwen3-32b", "parameters": 32_800_000_000,
             "precisions": ["bf16", "fp32"], "gpuCounts": [1, 2, 4, 8]}


@pytest.fixture
def deployment(redis_url, key_prefix, shared_artifacts):
    plain = make_config(redis_url, key_prefix, shared_artifacts)
    pools = {name: {"nodes": [{"name": n.name, "devices": {"kind": n.device_kind, "count": n.device_count}}
                              for n in pool.nodes], "quotas": pool.quotas}
             for name, pool in plain.pools.items()}
    config = make_config(redis_url, key_prefix, shared_artifacts, extra_catalog=[QWEN3_32B],
                         pools={**pools, **GPU_POOLS})
    return config, Catalog(config, ArtifactRoot(shared_artifacts))


def test_every_catalog_model_lists_exactly_what_the_resolver_accepts_pool_by_pool(deployment):
    config, catalog = deployment
    pools = list(config.pools.values())
    assert {"default", "big", "gpu16", "gpu80", "mixed"} <= set(config.pools)
    listed = {m["id"]: assert_list_and_resolver_agree(m, pools) for m in catalog.list()}
    assert set(listed) == {"builtin/tiny-qwen3", "Qwen/Qwen3-8B", "Qwen/Qwen3-32B"}
    tiny = listed["builtin/tiny-qwen3"]
    first = next(row for row in tiny if row["precision"] == "fp32")
    assert {k: first[k] for k in ("method", "gpus", "klPenalty", "restore", "engine")} == {
        "method": "sft", "gpus": 1, "klPenalty": False, "restore": "none", "engine": "sft-single"}
    assert set(first["pools"]) == set(config.pools) and first["memoryGiB"] < 2  # fits everywhere
    # 8B in bf16 (~21-36 GiB per GPU whole at the defaults): 80 GiB GPUs up to 2 whole; 16 GiB GPUs
    # only sharded (sft-fsdp, 4 GPUs or more: 19.7 GiB each on 2) and never for grpo, which has no
    # sharded engine
    eight = listed["Qwen/Qwen3-8B"]
    assert {row["gpus"] for row in eight if "gpu80" in row["pools"]} == {1, 2}
    assert all(row["engine"] != "sft-fsdp" for row in eight if "gpu80" in row["pools"])
    on_16 = [row for row in eight if "gpu16" in row["pools"]]
    assert {row["engine"] for row in on_16} == {"sft-fsdp"} and {row["gpus"] for row in on_16} == {4, 8}
    # 32B: fp32 (122 GiB of weights, margin on top) whole only where memory is unknown
    fp32 = [row for row in listed["Qwen/Qwen3-32B"] if row["precision"] == "fp32"]
    # whole (sft-single, grpo-single); sharded it fits none of the GPUs either: 95.5 GiB each over 2, 29.4
    # over 8 (its guessed vocabulary of 225k makes 10 GiB of logits)
    assert {p for row in fp32 if row["engine"] != "sft-fsdp" for p in row["pools"]} == {"default", "big"}
    assert {(row["gpus"], tuple(row["pools"])) for row in fp32 if row["engine"] == "sft-fsdp"
            and row["restore"] == "none"} == set()


def test_a_model_too_large_for_a_pool_is_not_listed_there_and_is_refused_with_the_memory_sentence(deployment):
    config, catalog = deployment
    model = catalog.get("Qwen/Qwen3-8B")
    rows = startable_runs(model, [config.pool("gpu16")])
    assert {row["engine"] for row in rows} == {"sft-fsdp"}  # whole copies never fit there, shards do
    plan = PLANS["sft", 1, "bf16", False, "none"]  # one GPU: nothing to shard across
    with pytest.raises(Unprocessable) as refused:
        resolve(plan, model=model, pool=config.pool("gpu16"))
    assert refused.value.message == reasons.memory_exceeded(
        model="Qwen/Qwen3-8B", needs_gib=training_memory_gib(plan, model=model), precision="bf16", pool="gpu16",
        has_gib=16.0)


nodes = st.builds(
    lambda i, kind, count, memory: Node(f"n{i}", kind, count, memory),
    st.integers(0, 99), st.sampled_from(("cpu", "cuda")), st.integers(1, 9),
    st.one_of(st.none(), st.sampled_from((0.25, 1.0, 16.0, 24.0, 40.0, 80.0, 141.0))),
)
pool_lists = st.lists(
    st.lists(nodes, min_size=1, max_size=3).map(tuple), min_size=1, max_size=3,
).map(lambda pools: [Pool(f"p{i}", node_tuple) for i, node_tuple in enumerate(pools)])
models = st.fixed_dictionaries({
    "id": st.just("some/model"),
    "parameters": st.one_of(st.none(), st.sampled_from((100_000, 500_000_000, 8_000_000_000, 32_000_000_000,
                                                        72_000_000_000))),
    "precisions": st.lists(st.sampled_from(PRECISIONS), min_size=1, unique=True),
    "gpuCounts": st.lists(st.sampled_from(tuple(GPU_COUNTS)), min_size=1, max_size=5, unique=True),
    "modality": st.sampled_from(("text", "text", "image-text")),
    "hiddenSize": st.one_of(st.none(), st.sampled_from((640, 4096))),
})


@settings(max_examples=150, deadline=None)
@given(model=models, pools=pool_lists)
def test_for_any_model_and_pools_the_list_is_what_the_resolver_accepts(model, pools):
    assert_list_and_resolver_agree(model, pools)
