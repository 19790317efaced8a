"""Training engines: plain Python that trains on the devices a worker was granted.

`base` holds what every engine shares (TrainingJob, Reporter, TrainingResult, the layout-2
snapshot format); each engine module exposes one `run_*(job, reporter) -> TrainingResult`.
Importing this package loads no torch; the engine modules import it when they run.
"""

from services.trainer_worker.engines.base import Reporter, TrainingJob, TrainingResult

__all__ = ["Reporter", "TrainingJob", "TrainingResult"]
