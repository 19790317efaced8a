"""Training engines: plain Python that trains on the devices a worker was granted.

`base` holds what every engine shares (TrainingJob, Reporter, TrainingResult, Restore, the
snapshot formats); each engine module exposes one `run_*(job, reporter) -> TrainingResult` that
trains one process's share. `train` is what the worker calls: on one device it runs the engine
here, on several it runs it in one process per device (`distributed`).
Importing this package loads no torch; the engine modules import it when they run.
"""

from __future__ import annotations

from typing import Callable

from services.trainer_worker.engines.base import Reporter, Restore, TrainingJob, TrainingResult

__all__ = ["Reporter", "Restore", "TrainingJob", "TrainingResult", "engine_function", "train"]


def engine_function(engine: str) -> Callable[[TrainingJob, Reporter], TrainingResult]:
    """The function that trains one process's share of a job of `engine` (shared/engines.py names)."""
    if engine in ("sft-single", "sft-ddp"):
        from services.trainer_worker.engines.sft import run_sft

        return run_sft
    if engine in ("grpo-single", "grpo-ddp"):
        from services.trainer_worker.engines.grpo import run_grpo

        return run_grpo
    raise KeyError(f"this worker has no engine {engine}")


def train(job: TrainingJob, reporter: Reporter) -> TrainingResult:
    """Train `job` on its devices: here on one, across one process per device on several."""
    if len(job.devices) > 1:
        from services.trainer_worker.engines.distributed import run_distributed

        return run_distributed(job, reporter)
    return engine_function(job.engine)(job, reporter)
