"""What each training engine of this deployment can train (SPEC 3.1).

Engines declare their support here; the resolver and `base-models get` both read these
declarations, so what is listed as startable and what is accepted can never disagree.
Engines register as they land: an engine that is not declared here does not exist for users.
"""

from __future__ import annotations

from dataclasses import dataclass

# What a run restores: nothing (a fresh adapter), the weights of a snapshot, or its training state.
RESTORE_NONE = "none"
RESTORE_WEIGHTS = "weights"
RESTORE_TRAINING_STATE = "trainingState"
ALL_RESTORES = (RESTORE_NONE, RESTORE_WEIGHTS, RESTORE_TRAINING_STATE)


@dataclass(frozen=True)
class EngineSpec:
    name: str
    method: str
    gpu_counts: tuple[int, ...]
    precisions: frozenset[str]
    # precisions that need CUDA devices (fp16 mixed precision does not train on CPU slots)
    cuda_only_precisions: frozenset[str] = frozenset({"fp16"})
    kl_penalty: bool = False  # trains with klPenalty > 0 (grpo only)
    restores: tuple[str, ...] = (RESTORE_NONE,)
    dataset_formats: frozenset[str] = frozenset({"chat", "completion"})
    modalities: frozenset[str] = frozenset({"text"})
    # Each device holds only its shard of the base weights, the adapter and its optimizer state
    # (FSDP2), instead of a whole copy (DDP): the resolver picks such an engine only when the plan's
    # memory estimate fits the GPUs sharded but not whole (shared/planning/resolver.py).
    shards_weights: bool = False

    def trains(self, *, method: str, gpus: int, precision: str, kl: bool, restore: str,
               device_kind: str) -> bool:
        return (
            method == self.method
            and gpus in self.gpu_counts
            and precision in self.precisions
            and (device_kind == "cuda" or precision not in self.cuda_only_precisions)
            and (kl is False or self.kl_penalty)
            and restore in self.restores
        )


ENGINES: tuple[EngineSpec, ...] = (
    # TRL SFTTrainer + PEFT LoRA in one process (services/trainer_worker/engines/sft.py); over an
    # image-text model its rows carry their images (engines/image_rows.py).
    EngineSpec(
        name="sft-single",
        method="sft",
        gpu_counts=(1,),
        precisions=frozenset({"fp32", "bf16", "fp16"}),
        restores=ALL_RESTORES,
        modalities=frozenset({"text", "image-text"}),
    ),
    # The same, one process per GPU of one node under DDP: gloo between CPU slots, NCCL between
    # GPUs (engines/distributed.py). The global batch is the plan's whatever the GPU count; each
    # rank collates its own rows' images.
    EngineSpec(
        name="sft-ddp",
        method="sft",
        gpu_counts=(2, 4, 8),
        precisions=frozenset({"fp32", "bf16", "fp16"}),
        restores=ALL_RESTORES,
        modalities=frozenset({"text", "image-text"}),
    ),
    # The same SFT sharded with FSDP2 (torch's fully_shard, through accelerate): for a model that
    # does not fit one GPU whole. gloo between CPU slots, NCCL between GPUs (engines/sharding.py);
    # its training state is a sharded torch.distributed.checkpoint (snapshots.SHARDED_TRAINING_STATE_FORMAT).
    EngineSpec(
        name="sft-fsdp",
        method="sft",
        gpu_counts=(2, 4, 8),
        precisions=frozenset({"fp32", "bf16", "fp16"}),
        restores=ALL_RESTORES,
        shards_weights=True,
    ),
    # TRL GRPOTrainer + PEFT LoRA in one process; rollouts from a serving process next to it that
    # is handed only the adapter after each update (services/trainer_worker/engines/grpo.py).
    # With klPenalty > 0 the reference is the base model (fresh adapter) or a frozen copy of the
    # inherited adapter (weights branch). Over an image-text model TRL reads each prompt's images
    # through the processor and rollouts are chat requests carrying them (engines/image_rows.py).
    EngineSpec(
        name="grpo-single",
        method="grpo",
        gpu_counts=(1,),
        precisions=frozenset({"fp32", "bf16", "fp16"}),
        kl_penalty=True,
        restores=ALL_RESTORES,
        dataset_formats=frozenset({"prompt", "chat", "completion"}),
        modalities=frozenset({"text", "image-text"}),
    ),
    # The same under DDP, one process per GPU of one node (engines/distributed.py), each rank with
    # its own rollout server; the global batch of completions is the plan's whatever the GPU count.
    # Over an image-text model each rank asks its server with its own prompts' pictures.
    EngineSpec(
        name="grpo-ddp",
        method="grpo",
        gpu_counts=(2, 4, 8),
        precisions=frozenset({"fp32", "bf16", "fp16"}),
        kl_penalty=True,
        restores=ALL_RESTORES,
        dataset_formats=frozenset({"prompt", "chat", "completion"}),
        modalities=frozenset({"text", "image-text"}),
    ),
)


def engine(name: str) -> EngineSpec:
    for spec in ENGINES:
        if spec.name == name:
            return spec
    raise KeyError(name)


def methods() -> list[str]:
    return sorted({e.method for e in ENGINES})
