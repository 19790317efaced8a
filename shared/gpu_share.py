"""What shares a GPU with a grpo run's trainer, and how the vLLM rollout server is sized to it.

Colocated GRPO puts two processes on each GPU: the trainer (shared/resolver.py
`training_memory_gib`) and the rollout server, which holds its own copy of the base weights at the
run's precision and a KV cache for the completions it samples. vLLM by default takes 90% of the
GPU and so either refuses to start beside a loaded trainer or starves it; here it is told
`--gpu-memory-utilization` (the fraction the trainer leaves free) and `--max-model-len` (the
longest sequence a rollout needs), both computed from the plan.

`VLLM_BATCH_INVARIANT=1` is set only where vLLM supports it: compute capability 9.0 and above.

Plain Python, no torch: the API (the resolver) and the worker (the rollout server) both use it.
"""

from __future__ import annotations

import math

from shared import reasons
from shared.errors import WorkFailed
from shared.plans import TrainingPlan

GIB = 1024**3
BYTES_PER_PARAMETER = {"fp32": 4, "bf16": 2, "fp16": 2}
KV_WIDTH_OF_HIDDEN = 0.25  # grouped KV heads: a quarter of hidden (as the resolver's LoRA widths assume)
SERVER_RUNTIME_GIB = 0.75  # vLLM's CUDA context, CUDA graphs and sampler buffers, about
# On a CPU slot the built-in server (shared/serving): its process with torch and transformers
# imported, measured as peak resident memory (docs/sharding.md), and the copy of every linear
# layer's weights it keeps beside the ones it folds the adapter into (shared/serving/adapter_fold.py)
CPU_SERVER_PROCESS_GIB = 0.6
LOGITS_COPIES_SAMPLING = 3  # fp32 vocab-sized tensors per sequence while sampling a token
BATCH_INVARIANT_MIN_CAPABILITY = (9, 0)  # vLLM's batch-invariant kernels need Hopper or newer
UTILIZATION_STEP = 0.01  # --gpu-memory-utilization is rounded down to this


def max_model_len(plan: TrainingPlan, *, max_positions: int | None = None) -> int:
    """The longest sequence a rollout needs: the prompt (at most maxSeqLength) and its completion,
    bounded by the model's `max_positions` (its config's max_position_embeddings) when known."""
    longest = plan.hyperparameters.max_seq_length + plan.grpo_settings.max_completion_length
    return min(longest, int(max_positions)) if max_positions else longest


def kv_cache_bytes(plan: TrainingPlan, *, hidden: int, layers: int, sequences: int) -> float:
    """Keys and values of `sequences` full-length rollouts: 2 x layers x KV width x bytes per token."""
    per_token = 2 * layers * hidden * KV_WIDTH_OF_HIDDEN * BYTES_PER_PARAMETER[plan.precision]
    return float(sequences * max_model_len(plan) * per_token)


def rollout_server_gib(plan: TrainingPlan, *, parameters: float, hidden: int, layers: int, vocab: int = 0,
                       device: str = "cuda") -> float:
    """What one device's rollout server needs: the base weights, the KV cache of the completions its
    rank samples at once (its share of the global batch), the logits it samples from, its runtime.
    On a CPU slot (the built-in server) also the linear layers' weights as loaded, kept beside the
    copy the adapter is folded into, and its process in place of vLLM's CUDA runtime."""
    # completions per rank per step (numGenerations per prompt among them)
    sequences = max(1, plan.hyperparameters.batch_size // plan.execution.gpus)
    weights = parameters * BYTES_PER_PARAMETER[plan.precision]
    kv = kv_cache_bytes(plan, hidden=hidden, layers=layers, sequences=sequences)
    logits = sequences * vocab * 4 * LOGITS_COPIES_SAMPLING
    if device == "cpu":
        folded = max(0.0, parameters - vocab * hidden) * BYTES_PER_PARAMETER[plan.precision]
        return (weights + folded + kv + logits) / GIB + CPU_SERVER_PROCESS_GIB
    return (weights + kv + logits) / GIB + SERVER_RUNTIME_GIB


def gpu_memory_utilization(*, device_gib: float, trainer_gib: float, server_gib: float) -> float:
    """vLLM's `--gpu-memory-utilization`: the share of the GPU the trainer leaves free, rounded down;
    WorkFailed when that is less than the server needs (the resolver refuses such plans first)."""
    free = (device_gib - trainer_gib) / device_gib
    share = math.floor(free / UTILIZATION_STEP + 1e-9) * UTILIZATION_STEP
    if share * device_gib < server_gib:
        raise WorkFailed(reasons.rollout_server_does_not_fit(free_gib=free * device_gib, device_gib=device_gib,
                                                             server_gib=server_gib))
    return round(share, 2)


def batch_invariant_supported(capability: tuple[int, int] | None) -> bool:
    """Whether vLLM's batch-invariant mode runs on a device of this CUDA compute capability
    (None: not known, so not asked for)."""
    return capability is not None and tuple(capability) >= BATCH_INVARIANT_MIN_CAPABILITY
