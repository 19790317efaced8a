"""The sharded engines' part of training (sft-fsdp; shared/planning/engines.py `shards_weights`): FSDP2,
torch's `fully_shard`, applied by accelerate through the HF Trainer's `fsdp` arguments.

Each rank holds 1/N of the base weights, the adapter, its gradients and Adam's moments; FSDP2
all-gathers one decoder layer at a time for its forward and backward (accelerate's
TRANSFORMER_BASED_WRAP: one unit per decoder layer, plus the embeddings and the head). The HF
Trainer saves its checkpoints as sharded torch.distributed.checkpoint (DCP) directories
(`pytorch_model_fsdp_0/` holds the adapter only, `optimizer_0/` its optimizer state; accelerate's
SHARDED_STATE_DICT), which it resumes from exactly; `write_adapter` adds the whole adapter in PEFT
format beside them, so a snapshot of a sharded run has the same `adapter/` as any other.

Why a Trainer subclass (`sharded_trainer`): accelerate 1.15 turns FSDP on only for accelerator
devices (CUDA, XPU, NPU, ...); on CPU processes it keeps MULTI_CPU and wraps the model in DDP, though
`fully_shard` itself trains on CPU under gloo. The subclass makes the same accelerator FSDP on
CPU slots, so CI runs the very code path a GPU node runs (with NCCL there and nothing changed).

Importing this loads no torch; the functions that need it import it when they run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shared.planning.engines import engine as declared_engine


def shards(job_engine: str) -> bool:
    return declared_engine(job_engine).shards_weights


def fsdp_arguments(*, on_cpu: bool) -> dict[str, Any]:
    """The HF TrainingArguments that make a run FSDP2 (merged over kit.trainer_arguments)."""
    return dict(
        fsdp=True,
        fsdp_config={
            "fsdp_version": 2,
            "state_dict_type": "SHARDED_STATE_DICT",  # DCP, one shard per rank
            "auto_wrap_policy": "TRANSFORMER_BASED_WRAP",  # one unit per decoder layer
            "reshard_after_forward": True,  # free each layer's gathered weights after its forward
            "cpu_ram_efficient_loading": False,  # every rank loads the model it then shards
            # FSDP's own activation checkpointing (the Trainer's would all-gather twice per layer)
            "activation_checkpointing": not on_cpu,
        },
        activation_checkpointing=False,
    )


def sharded_trainer(trainer_class: type) -> type:
    """`trainer_class` (an HF Trainer) whose accelerator is FSDP on CPU slots too (see above)."""

    def create_accelerator_and_postprocess(self):
        trainer_class.create_accelerator_and_postprocess(self)
        from accelerate.utils import DistributedType, FullyShardedDataParallelPlugin

        state = self.accelerator.state
        if state.distributed_type == DistributedType.MULTI_CPU and self.args.fsdp_plugin_args is not None:
            state.fsdp_plugin = FullyShardedDataParallelPlugin(**self.args.fsdp_plugin_args)
            state.distributed_type = DistributedType.FSDP
            self.is_fsdp_enabled = True

    return type(f"Sharded{trainer_class.__name__}", (trainer_class,),
                {"create_accelerator_and_postprocess": create_accelerator_and_postprocess})


def write_adapter(model, checkpoint: Path, *, main: bool) -> None:
    """Write the whole adapter (PEFT safetensors + adapter_config.json) into `checkpoint`. Every rank
    must call it: each trainable shard is gathered by a collective (only the adapter's: the frozen
    base weights never leave their shards); the main process (rank 0) writes."""
    from torch.distributed.tensor import DTensor

    adapter = {}
    for name, param in model.named_parameters():  # the same order on every rank
        if param.requires_grad:
            whole = param.full_tensor() if isinstance(param, DTensor) else param
            adapter[name] = whole.detach().cpu()
    if main:
        model.save_pretrained(str(checkpoint), state_dict=adapter, safe_serialization=True)
