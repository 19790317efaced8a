"""Training engines: plain Python that trains on the devices a worker was granted.

`base` holds the interface every engine is given and returns (TrainingJob, Reporter,
TrainingResult, Restore, the snapshot conversions); `kit` what every engine is built from; each
method's module (`sft`, `grpo`) exposes one `run_*(job, reporter) -> TrainingResult` that trains
one process's share. `train` is what the worker calls: on one device it runs the engine here, on
several it runs it in one process per device (`distributed`).

Which function trains an engine is decided here only, by the engine's method as shared/planning/engines.py
declares it: every engine of a method (its single-device and its multi-device one) runs the same
function. Importing this package loads no torch; the engine modules import it when they run.
"""

from __future__ import annotations

import importlib
from typing import Callable

from services.trainer_worker.engines.base import Reporter, Restore, TrainingJob, TrainingResult
from shared import reasons
from shared.errors import WorkFailed
from shared.planning.engines import engine as declared_engine

__all__ = ["RUNNERS", "Reporter", "Restore", "TrainingJob", "TrainingResult", "engine_function", "train"]

# method (shared/planning/engines.py EngineSpec.method) -> "module:function" that trains one process's share
RUNNERS: dict[str, str] = {
    "sft": "services.trainer_worker.engines.sft:run_sft",
    "grpo": "services.trainer_worker.engines.grpo:run_grpo",
}


def engine_function(engine: str) -> Callable[[TrainingJob, Reporter], TrainingResult]:
    """The function that trains one process's share of a job of `engine` (a shared/planning/engines.py name)."""
    try:
        runner = RUNNERS[declared_engine(engine).method]
    except KeyError:
        raise WorkFailed(reasons.engine_missing(engine)) from None
    module, function = runner.split(":")
    return getattr(importlib.import_module(module), function)


def train(job: TrainingJob, reporter: Reporter) -> TrainingResult:
    """Train `job` on its devices: here on one, across one process per device on several."""
    if len(job.devices) > 1:
        from services.trainer_worker.engines.distributed import run_distributed

        return run_distributed(job, reporter)
    return engine_function(job.engine)(job, reporter)
