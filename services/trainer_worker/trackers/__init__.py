"""Where a run's metrics go besides its own series: the trackers the deployment config names
(`trackers.reportTo`, shared/config/trackers.py): TensorBoard event files in the run's artifacts
(`tensorboard_events.py`), MLflow (`mlflow_runs.py`), Weights & Biases (`wandb_runs.py`).

The reporter hands every metrics point to `Trackers.log` right after it is stored; each tracker
gets the point's numbers under the metrics API's names with the step as x axis, each (name, step)
once per run (`scalars.py`). A tracker is opened at the run's first point, so that a run cancelled
before it trained leaves no trace. A tracker that fails (its server away, its disk full) never
fails the run: the run gets one warn event naming it and the error, and trains on without it.
"""

from __future__ import annotations

import importlib.util
from typing import Any, Callable, Iterable

from services.trainer_worker.trackers.scalars import SentSteps
from shared import reasons
from shared.config.trackers import MLFLOW, TENSORBOARD, WANDB, TrackerSettings
from shared.store.artifacts import ArtifactStore

# The package each tracker needs, and where it comes from.
PACKAGES = {TENSORBOARD: ("tensorboard", "the trainer's own dependencies"),
            MLFLOW: ("mlflow", "the trackers extra: pip install 'the-trainer[trackers]'"),
            WANDB: ("wandb", "the trackers extra: pip install 'the-trainer[trackers]'")}


def missing_packages(settings: TrackerSettings) -> list[str]:
    """One sentence per tracker the config names whose package this Python lacks (a worker's start-up check)."""
    return [reasons.tracker_package_missing(name, PACKAGES[name][0], PACKAGES[name][1])
            for name in settings.report_to if importlib.util.find_spec(PACKAGES[name][0]) is None]


def _opener(name: str, settings: TrackerSettings, artifacts: ArtifactStore, run: dict[str, Any]):
    if name == TENSORBOARD:
        from services.trainer_worker.trackers.tensorboard_events import TensorBoardEvents

        return lambda: TensorBoardEvents(artifacts=artifacts, run=run)
    if name == MLFLOW:
        from services.trainer_worker.trackers.mlflow_runs import MlflowRun

        return lambda: MlflowRun(settings=settings.mlflow, run=run)
    from services.trainer_worker.trackers.wandb_runs import WandbRun

    return lambda: WandbRun(settings=settings.wandb, artifacts=artifacts, run=run)


class Trackers:
    """The trackers of one attempt of one run."""

    def __init__(self, *, settings: TrackerSettings, artifacts: ArtifactStore, run: dict[str, Any],
                 earlier: Iterable[dict[str, Any]], warn: Callable[[str], None]):
        self.warn = warn
        self.sent = SentSteps(earlier)  # what earlier attempts of the run already sent
        self._to_open = {name: _opener(name, settings, artifacts, run) for name in settings.report_to}
        self.open: dict[str, Any] = {}

    @property
    def names(self) -> list[str]:
        return [*self.open, *self._to_open]

    def log(self, point: dict[str, Any]) -> None:
        scalars = self.sent.fresh(point)
        if not scalars:
            return
        step = int(point.get("step") or 0)
        for name, opener in list(self._to_open.items()):
            del self._to_open[name]
            self._try(name, "could not start", lambda: self.open.__setitem__(name, opener()))
        for name, tracker in list(self.open.items()):
            if not self._try(name, f"stopped at step {step}", lambda: tracker.log(step, scalars)):
                del self.open[name]

    def close(self, outcome: str | None) -> None:
        """The run ended (`outcome`: its status), or its attempt stopped (None: lease lost)."""
        self._to_open.clear()
        for name, tracker in list(self.open.items()):
            self._try(name, "could not finish", lambda: tracker.close(outcome))
        self.open.clear()

    def _try(self, name: str, what: str, action: Callable[[], None]) -> bool:
        try:
            action()
            return True
        except Exception as exc:  # noqa: BLE001 - a tracker never fails the run it tracks
            self.warn(reasons.tracker_failed(name, what, reasons.error_text(exc)))
            return False
