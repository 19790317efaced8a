"""A run's metrics sent to MLflow (trackers.mlflow of the deployment config): one MLflow run per
trainer run, found again by its tag `trainer.run` when the run resumes, its plan as params."""

from __future__ import annotations

import time
from typing import Any

from services.trainer_worker.trackers.scalars import flat_params
from shared.config.trackers import MlflowSettings
from shared.plans import TrainingPlan

RUN_TAG = "trainer.run"
# How a trainer run's end reads in MLflow; a paused run waits to be resumed.
STATUS_OF = {"SUCCEEDED": "FINISHED", "FAILED": "FAILED", "CANCELLED": "KILLED", "PAUSED": "SCHEDULED"}


def run_tags(run: dict[str, Any]) -> dict[str, str]:
    parent = run.get("parent") or {}
    tags = {RUN_TAG: run["id"], "trainer.workload": run.get("workload"), "trainer.engine": run.get("engine"),
            "trainer.model": TrainingPlan.from_dict(run["plan"]).model, "trainer.parentRun": parent.get("run"),
            "trainer.parentSnapshot": parent.get("snapshot")}
    return {k: str(v) for k, v in tags.items() if v is not None}


class MlflowRun:
    name = "mlflow"

    def __init__(self, *, settings: MlflowSettings, run: dict[str, Any]):
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri=settings.tracking_uri)
        experiment = self.client.get_experiment_by_name(settings.experiment)
        experiment_id = experiment.experiment_id if experiment else self.client.create_experiment(settings.experiment)
        found = self.client.search_runs([experiment_id], filter_string=f"tags.`{RUN_TAG}` = '{run['id']}'",
                                        max_results=1)
        if found:  # resumed or re-queued: the same MLflow run continues
            self.run_id = found[0].info.run_id
            self.client.update_run(self.run_id, status="RUNNING")
        else:
            from mlflow.entities import Param

            self.run_id = self.client.create_run(experiment_id, run_name=run.get("name") or run["id"],
                                                 tags=run_tags(run)).info.run_id
            params = [Param(k, v) for k, v in flat_params(run.get("plan") or {}).items()]
            for start in range(0, len(params), 100):  # MLflow takes at most 100 params a batch
                self.client.log_batch(self.run_id, params=params[start:start + 100])

    def log(self, step: int, scalars: dict[str, float]) -> None:
        from mlflow.entities import Metric

        now_ms = int(time.time() * 1000)
        self.client.log_batch(self.run_id, metrics=[Metric(k, v, now_ms, step) for k, v in scalars.items()])

    def close(self, outcome: str | None) -> None:
        if outcome in STATUS_OF:  # a lost lease leaves it RUNNING for the attempt that follows
            self.client.update_run(self.run_id, status=STATUS_OF[outcome])
