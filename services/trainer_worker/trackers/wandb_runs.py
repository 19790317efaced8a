"""A run's metrics sent to Weights & Biases (trackers.wandb of the deployment config): one W&B run
per trainer run, of the same id (resumed when the run resumes), its plan as config. In offline
mode it is written under the run's artifacts (`runs/RUN/wandb`), for `wandb sync` to upload."""

from __future__ import annotations

from typing import Any

from services.trainer_worker.trackers.scalars import flat_params
from shared.config.trackers import WandbSettings
from shared.store.artifacts import ArtifactStore, wandb_key


class WandbRun:
    name = "wandb"

    def __init__(self, *, settings: WandbSettings, artifacts: ArtifactStore, run: dict[str, Any]):
        import wandb

        self.run = wandb.init(
            project=settings.project, entity=settings.entity, mode=settings.mode,
            id=run["id"], name=run.get("name") or run["id"], resume="allow",
            dir=str(artifacts.scratch(wandb_key(run["id"]))),
            config=flat_params(run.get("plan") or {}),
            tags=[t for t in (run.get("workload"), run.get("engine")) if t],
            group=(run.get("parent") or {}).get("run"),  # a branch sits beside the run it branches from
            settings=wandb.Settings(console="off", silent=True, x_disable_stats=True),
        )

    def log(self, step: int, scalars: dict[str, float]) -> None:
        self.run.log(scalars, step=step)

    def close(self, outcome: str | None) -> None:
        self.run.finish(exit_code=1 if outcome == "FAILED" else 0)
