"""The resolver refuses, before anything is queued, a plan that would not fit any node's GPU memory."""

from __future__ import annotations

import pytest

from shared import reasons
from shared.artifacts import ArtifactRoot
from shared.catalog import Catalog
from shared.config import Node, Pool, parse_config
from shared.errors import Unprocessable
from shared.plans import Adapter
from shared.resolver import (
    CPU,
    CPU_PROCESS_GIB,
    CUDA,
    MARGIN,
    RUNTIME_GIB,
    admitted_device,
    lora_parameters,
    resolve,
    trainer_memory_gib,
    training_memory_gib,
)
from tests.shared.plan_fixtures import typed

QWEN3_8B = {"id": "Qwen/Qwen3-8B", "parameters": 8_190_000_000, "precisions": ["bf16", "fp32"],
            "gpuCounts": [1, 2, 4, 8], "modality": "text"}


def plan(precision="fp32", gpus=1, **hyper):
    return typed({"method": "sft", "precision": precision, "execution": {"gpus": gpus},
                  "adapter": {"rank": 8, "targetModules": "all-linear"},
                  "hyperparameters": {"batchSize": 8, "gradientAccumulation": 1, "maxSeqLength": 512, **hyper}})


def cuda_pool(*memories, count=8, name="default"):
    return Pool(name, tuple(Node(f"n{i}", "cuda", count, m) for i, m in enumerate(memories)))


def test_an_8b_model_in_fp32_does_not_fit_16_gib():
    needs = training_memory_gib(plan(), model=QWEN3_8B)
    assert 30 < needs < 65  # 30.5 GiB of fp32 weights alone
    with pytest.raises(Unprocessable) as refused:
        resolve(plan(), model=QWEN3_8B, pool=cuda_pool(16, 16))
    assert refused.value.message == reasons.memory_exceeded(
        model="Qwen/Qwen3-8B", needs_gib=needs, precision="fp32", pool="default", has_gib=16.0)
    assert refused.value.message == (
        f"model Qwen/Qwen3-8B needs about {needs:.1f} GiB per GPU to train in fp32 with this adapter, "
        "and the nodes of pool default have 16.0 GiB per GPU")
    assert refused.value.details["field"] == "model" and refused.value.status == 422


def test_the_same_model_in_bf16_fits_80_gib_and_precision_halves_the_weights():
    fp32, bf16 = (training_memory_gib(plan(p), model=QWEN3_8B) for p in ("fp32", "bf16"))
    assert fp32 - bf16 > 8_190_000_000 * 2 / 1024**3 * (1 + MARGIN)  # the weights halve, the activations too
    assert resolve(plan("bf16"), model=QWEN3_8B, pool=cuda_pool(80)).name == "sft-single"
    assert resolve(plan("bf16", gpus=2), model=QWEN3_8B, pool=cuda_pool(80)).name == "sft-ddp"


def test_nodes_of_different_memory_are_named_by_the_largest():
    with pytest.raises(Unprocessable) as refused:
        resolve(plan(), model=QWEN3_8B, pool=cuda_pool(16, 24))
    assert refused.value.message.endswith("and the nodes of pool default have at most 24.0 GiB per GPU")


def test_only_nodes_with_enough_gpus_count():
    pool = Pool("mixed", (Node("big-memory", "cuda", 1, 141.0), Node("many-gpus", "cuda", 8, 16.0)))
    assert resolve(plan("fp32", gpus=1), model=QWEN3_8B, pool=pool).name == "sft-single"
    with pytest.raises(Unprocessable, match="the nodes of pool mixed have 16.0 GiB per GPU"):
        resolve(plan("fp32", gpus=2), model=QWEN3_8B, pool=pool)


def test_unknown_memory_or_unknown_size_is_never_refused():
    assert resolve(plan(), model=QWEN3_8B, pool=cuda_pool(None)).name == "sft-single"
    assert resolve(plan(), model=QWEN3_8B, pool=cuda_pool(16, None)).name == "sft-single"  # the second might fit
    unknown = {**QWEN3_8B, "parameters": None}
    assert training_memory_gib(plan(), model=unknown) is None
    assert resolve(plan(), model=unknown, pool=cuda_pool(16)).name == "sft-single"


def test_activations_grow_with_the_micro_batch_and_sequence():
    base = training_memory_gib(plan(), model=QWEN3_8B)
    assert training_memory_gib(plan(maxSeqLength=4096), model=QWEN3_8B) > base + 5
    assert training_memory_gib(plan(gpus=8), model=QWEN3_8B) < base  # 1 row per GPU instead of 8
    assert training_memory_gib(plan(gradientAccumulation=8), model=QWEN3_8B) < base


def test_lora_parameter_estimate_is_close_to_what_peft_counts(tmp_path):
    # NOTES: a 77M Qwen3-style model (hidden 640, 12 layers), rank 16 all-linear: PEFT counts 2.26M
    assert lora_parameters(Adapter.from_dict({"rank": 16, "targetModules": "all-linear"}), hidden=640, layers=12) == pytest.approx(2.26e6, rel=0.02)
    assert lora_parameters(Adapter.from_dict({"rank": 8, "targetModules": ["q_proj", "v_proj"]}), hidden=640, layers=12) == 8 * 12 * 3.25 * 640


def test_a_config_declaring_small_memory_refuses_the_tiny_model(tmp_path):
    raw = {"pools": {"small": {"nodes": [{"name": "n", "devices": {"kind": "cpu", "count": 2, "memoryGiB": 0.25}}]},
                     "roomy": {"nodes": [{"name": "m", "devices": {"kind": "cpu", "count": 2, "memoryGiB": 4}}]},
                     "default": {"nodes": [{"name": "local", "devices": {"kind": "cpu", "count": 2}}]}}}
    config = parse_config(raw, env={"TRAINING_ARTIFACT_ROOT": str(tmp_path)})
    tiny = Catalog(config, ArtifactRoot(tmp_path)).get("builtin/tiny-qwen3")
    needs = training_memory_gib(plan(), model=tiny, device="cpu")  # every node of these pools has CPU slots
    assert 1.0 < needs < 1.6  # mostly the process itself: the model is ~100k parameters
    with pytest.raises(Unprocessable) as refused:
        resolve(plan(), model=tiny, pool=config.pool("small"))
    assert refused.value.message == (
        f"model builtin/tiny-qwen3 needs about {needs:.1f} GiB per GPU to train in fp32 with this adapter, "
        "and the nodes of pool small have 0.2 GiB per GPU")
    assert resolve(plan(), model=tiny, pool=config.pool("roomy")).name == "sft-single"
    assert resolve(plan(gpus=2), model=tiny, pool=config.pool("default")).name == "sft-ddp"  # memory unknown


def test_a_cpu_slot_is_estimated_as_it_trains_without_checkpointing_and_with_its_process():
    on_cpu = training_memory_gib(plan(), model=QWEN3_8B, device=CPU)
    as_on_cuda = training_memory_gib(plan(), model=QWEN3_8B, device=CUDA, activation_checkpointing=False)
    assert on_cpu - as_on_cuda == pytest.approx((CPU_PROCESS_GIB - RUNTIME_GIB) * (1 + MARGIN))
    assert on_cpu > training_memory_gib(plan(), model=QWEN3_8B, device=CUDA)  # CUDA admits with checkpointing
    cpu_pool = Pool("cpus", (Node("n", "cpu", 2, 64.0),))
    assert admitted_device(plan(), cpu_pool) == CPU and admitted_device(plan(), cuda_pool(80)) == CUDA
    mixed = Pool("mixed", (Node("c", "cpu", 2, 64.0), Node("g", "cuda", 2, 80.0)))
    assert admitted_device(plan(), mixed) == CUDA


def test_the_stated_margin_is_over_every_term():
    small = {"parameters": 1_000_000, "hiddenSize": 64, "layers": 2, "vocabSize": 100, "intermediateSize": 128}
    one_token = plan(batchSize=1, maxSeqLength=1, precision="fp32")
    weights, adapter = 1_000_000 * 4, lora_parameters(one_token.adapter, hidden=64, layers=2) * 16
    activations = 2 * 4 * (22 * 64 + 4 * 128)  # two layers, fp32, no checkpointing
    logits = 100 * 4 * 6
    expected = ((weights + adapter + activations + logits) / 1024**3 + RUNTIME_GIB) * (1 + MARGIN)
    assert trainer_memory_gib(one_token, model=small, activation_checkpointing=False) == pytest.approx(expected)


def test_the_ffn_width_is_the_entrys_when_it_gives_it():
    narrow = {**QWEN3_8B, "hiddenSize": 4096, "layers": 36, "vocabSize": 151936, "intermediateSize": 4096}
    wide = {**narrow, "intermediateSize": 4 * 4096}
    assert training_memory_gib(plan(), model=wide) > training_memory_gib(plan(), model=narrow)


def test_a_grpo_plan_counts_its_rollout_server_with_the_margin():
    grpo = typed({"method": "grpo", "precision": "bf16", "execution": {"gpus": 1},
                  "hyperparameters": {"batchSize": 8, "maxSeqLength": 256},
                  "grpo": {"numGenerations": 4, "maxCompletionLength": 64, "rewards": [{"function": "exact_match"}]}})
    for device in (CPU, CUDA):
        trainer = trainer_memory_gib(grpo, model=QWEN3_8B, device=device)
        assert training_memory_gib(grpo, model=QWEN3_8B, device=device) > trainer + 8_190_000_000 * 2 / 1024**3
