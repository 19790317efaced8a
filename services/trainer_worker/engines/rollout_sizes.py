"""How large the vLLM rollout server of a grpo run may be on its GPU (shared/gpu_share.py).

The resolver estimated the plan against the catalog before the run was granted; here the worker
sizes the server against what it has in hand: the model's own shape (its config.json), its exact
parameter count (the loaded base model) and the memory of the GPU it trains on (torch). The trainer
keeps what `shared.resolver.trainer_memory_gib` estimates it needs; vLLM is told to take at most the
rest (`--gpu-memory-utilization`) and to serve sequences no longer than a rollout needs
(`--max-model-len`: the prompt and its completion, bounded by the model's max positions).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shared.model_facts import read_model_facts
from shared.gpu_share import GIB, gpu_memory_utilization, max_model_len, rollout_server_gib
from shared.plans import TrainingPlan
from shared.resolver import model_shape, trainer_memory_gib


def model_facts(model_dir: Path, *, parameters: int) -> dict[str, Any]:
    """The catalog-like facts the estimates read (`shared.resolver.model_shape`), from the model's own
    files as the catalog reads them (shared/model_facts.py), with the parameters of the model as loaded."""
    return {**read_model_facts(model_dir, model=Path(model_dir).name), "parameters": int(parameters)}


def base_parameters(peft_model) -> int:
    """The parameters of the base model under a PEFT model (its LoRA weights not counted)."""
    return sum(p.numel() for name, p in peft_model.named_parameters() if "lora_" not in name)


def device_memory_gib() -> float:
    """The total memory of the CUDA device this process trains on."""
    import torch

    return torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory / GIB


def vllm_sizes(plan: TrainingPlan, *, model_dir: Path, parameters: int, device_gib: float) -> dict[str, Any]:
    """`gpu_memory_utilization` and `max_model_len` for `VllmBackend`: the share of a `device_gib`
    GPU the trainer leaves free, and the longest sequence a rollout needs. A ValueError (its sentence
    from shared/gpu_share.py) when what is left is less than the server needs."""
    model = model_facts(model_dir, parameters=parameters)
    hidden, layers, vocab = model_shape(model)
    trainer = trainer_memory_gib(plan, model=model)
    server = rollout_server_gib(plan, parameters=float(parameters), hidden=hidden, layers=layers, vocab=vocab)
    return {"gpu_memory_utilization": gpu_memory_utilization(device_gib=device_gib, trainer_gib=trainer,
                                                             server_gib=server),
            "max_model_len": max_model_len(plan, max_positions=model["maxPositions"])}
