"""What the worker imports once, before Celery forks the children that run tasks.

Each task runs in a fresh child (max-tasks-per-child 1), forked from the worker's main process.
A child that imports torch, transformers, peft, datasets and TRL itself spends seconds on it before
it loads a model (on this 2-core machine about as long as the bare TRL script's own imports,
docs/performance.md); imported here, in the parent, every child starts with them in memory.

Nothing here touches a device: importing torch does not initialise CUDA, so a child still chooses
its GPUs (CUDA_VISIBLE_DEVICES, node_worker.use_granted_devices) before CUDA starts, and no torch
thread pool exists yet to be lost across the fork.
"""

from __future__ import annotations

import importlib
import time

# The modules a training task needs, heaviest first (trl pulls in transformers.Trainer, accelerate).
MODULES = (
    "torch",
    "transformers",
    "peft",
    "datasets",
    "trl",
    "torch.utils.tensorboard",  # the default tracker's writer (trackers/tensorboard_events.py)
    "services.trainer_worker.engines.kit",
    "services.trainer_worker.engines.sft",
    "services.trainer_worker.engines.grpo",
)
# Names the packages load lazily on first use; reading them does the work now.
LAZY_NAMES = (
    ("transformers", ("AutoModelForCausalLM", "AutoTokenizer", "TrainerCallback")),
    ("peft", ("LoraConfig", "PeftModel")),
    ("trl", ("SFTConfig", "SFTTrainer", "GRPOConfig", "GRPOTrainer")),
)


def preload() -> float:
    """Import what a training task needs; returns the seconds it took."""
    import os

    started = time.perf_counter()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # as engines.grpo sets it before importing trl
    for name in MODULES:
        importlib.import_module(name)
    for module, names in LAZY_NAMES:
        loaded = importlib.import_module(module)
        for name in names:
            getattr(loaded, name)
    return time.perf_counter() - started
