"""How the vLLM rollout server is sized beside a grpo run's trainer (shared/gpu_share.py)."""

from __future__ import annotations

import pytest

from shared.errors import WorkFailed
from shared.gpu_share import (
    CPU_SERVER_PROCESS_GIB,
    GIB,
    LOGITS_COPIES_SAMPLING,
    SERVER_RUNTIME_GIB,
    batch_invariant_supported,
    gpu_memory_utilization,
    kv_cache_bytes,
    max_model_len,
    rollout_server_gib,
)
from tests.shared.plan_fixtures import typed

PLAN = typed({"method": "grpo", "precision": "bf16", "execution": {"gpus": 2},
              "hyperparameters": {"batchSize": 16, "maxSeqLength": 1024}, "grpo": {"maxCompletionLength": 256}})


def test_the_longest_sequence_is_the_prompt_and_its_completion():
    assert max_model_len(PLAN) == 1024 + 256


def test_the_server_holds_the_base_weights_its_kv_cache_and_its_runtime():
    # 8B in bf16, hidden 4096, 36 layers: 8 completions per rank of 1280 tokens,
    # 2 (k, v) x 36 x 1024 (a quarter of hidden) x 2 bytes = 147456 bytes per token
    kv = kv_cache_bytes(PLAN, hidden=4096, layers=36, sequences=8)
    assert kv == 8 * 1280 * 147456
    needs = rollout_server_gib(PLAN, parameters=8e9, hidden=4096, layers=36)
    assert needs == pytest.approx((8e9 * 2 + kv) / GIB + SERVER_RUNTIME_GIB)


def test_the_built_in_server_on_a_cpu_slot_also_keeps_the_linear_layers_as_loaded_and_its_process():
    kv = kv_cache_bytes(PLAN, hidden=4096, layers=36, sequences=8)
    logits = 8 * 151936 * 4 * LOGITS_COPIES_SAMPLING
    linear = 8e9 - 151936 * 4096  # every weight but the (tied) embedding's
    needs = rollout_server_gib(PLAN, parameters=8e9, hidden=4096, layers=36, vocab=151936, device="cpu")
    assert needs == pytest.approx((8e9 * 2 + linear * 2 + kv + logits) / GIB + CPU_SERVER_PROCESS_GIB)


def test_vllm_gets_the_share_the_trainer_leaves_free_rounded_down():
    assert gpu_memory_utilization(device_gib=80.0, trainer_gib=50.0, server_gib=17.0) == 0.37  # 30/80 = 0.375
    with pytest.raises(WorkFailed) as refused:
        gpu_memory_utilization(device_gib=80.0, trainer_gib=70.0, server_gib=17.0)
    assert str(refused.value) == "the trainer leaves 10.0 GiB of 80.0 GiB free, and the rollout server needs 17.0 GiB"


@pytest.mark.parametrize(("capability", "supported"),
                         [((9, 0), True), ((12, 1), True), ((8, 9), False), ((7, 5), False), (None, False)])
def test_batch_invariant_mode_needs_compute_capability_9(capability, supported):
    assert batch_invariant_supported(capability) is supported
