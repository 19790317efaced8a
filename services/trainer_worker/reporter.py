"""The Redis-backed reporter an engine talks to (engines.base.Reporter): metrics, events,
progress, snapshots and cancellation, each write fenced by the worker's lease. Every metrics point
also goes to the deployment's trackers (trackers/: TensorBoard, MLflow, W&B) once it is stored.

A run that resumes after a lost process trains the steps after its latest snapshot again; their
points are not logged twice (each metric name at each step once, as trackers/scalars.py sends
them), so the series holds every step once. Training resumes exactly, so the points kept are what
the steps trained again report too."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Iterable

from services.trainer_worker import fenced_snapshots, stopping
from services.trainer_worker.engines.base import STOP_PAUSE
from services.trainer_worker.lease import Lease, LeaseLost, fenced_move, fenced_update
from services.trainer_worker.trackers.scalars import SentSteps
from shared import reasons
from shared.artifacts import ArtifactRoot
from shared.ids import Kind, new_id
from shared.lifecycle.runs import RUNS
from shared.rollout_samples import SAMPLE_STEPS
from shared.snapshot_files import record
from shared.states import RunStatus
from shared.store import Store
from shared.times import now_iso

PROGRESS_EVERY_S = 0.25
CANCEL_CHECK_EVERY_S = 0.5
# What `RunReporter.stop` holds when its worker is stopping: the engine is asked to pause (a snapshot
# at the step boundary), and the run is then given back to the queue (stopping.py).
STOP_REQUEUE = "requeue"


class CancelledWhileStarting(Exception):
    """The user cancelled the run while its engine loaded: it ends CANCELLED before its first step."""


class RunReporter:
    def __init__(self, *, store: Store, artifacts: ArtifactRoot, run: dict[str, Any], lease: Lease, log,
                 trackers=None, earlier: Iterable[dict[str, Any]] | None = None):
        self.store = store
        self.artifacts = artifacts
        self.run_id = run["id"]
        self.workload = run["workload"]
        self.attempt = int(run.get("attempts") or 0)  # a re-queued run trains some steps again
        self.lease = lease
        self.log = log
        self.total_steps: int | None = None
        self.last_step = int((run.get("progress") or {}).get("step") or 0)
        self._started_at: float | None = None
        self._first_step: int | None = None
        self._first_loss: float | None = (run.get("progress") or {}).get("firstLoss")
        self._last_progress_write = 0.0
        self._last_cancel_check = 0.0
        self._pending: dict[str, Any] | None = None
        self.stop: str | None = None  # None, "cancel" or "pause" (the user's), STOP_REQUEUE (its worker's)
        self.trackers = trackers  # trackers.Trackers, or None: the run's series only
        # (name, step) already in the run's series, from an earlier attempt: not logged again
        self.logged = SentSteps(store.metrics(self.run_id) if earlier is None else earlier)
        self.unsaved = False  # a step trained here since the last snapshot written here

    # --- fenced writes
    def update_run(self, change) -> dict[str, Any]:
        return fenced_update(self.store, self.lease, "run", change)

    # --- engines.base.Reporter
    def started(self, *, total_steps: int) -> None:
        self.total_steps = total_steps
        self._started_at = time.monotonic()

        # A cancel sent while the run was STARTING ends it here, before its first step: read in the
        # same write as the move, so none is missed however short the run.
        moved = fenced_move(self.store, self.lease, RUNS,
                            lambda doc: None if doc.get("cancelRequested") else RunStatus.RUNNING,
                            change=lambda doc: {**doc, "progress": {**doc["progress"], "totalSteps": total_steps}})
        if moved is None:
            self.stop = "cancel"
            raise CancelledWhileStarting(self.run_id)
        self.event(reasons.training_started(total_steps))

    def metrics(self, point: dict[str, Any]) -> None:
        point = {**point, "attempt": self.attempt, "time": now_iso()}
        if self.logged.fresh(point):  # else a step trained again after a resume, already in the series
            self.store.add_metrics(self.run_id, point)
            if self.trackers is not None:
                self.trackers.log(point)
        self.unsaved = True
        step = int(point.get("step") or 0)
        self.last_step = step
        if self._first_step is None:
            self._first_step = step
        if self._first_loss is None and point.get("loss") is not None:
            self._first_loss = float(point["loss"])
        eta = None
        taken = step - self._first_step + 1  # steps this worker took (a resumed run starts past 0)
        if self._started_at and self.total_steps and taken > 0:
            per_step = (time.monotonic() - self._started_at) / taken
            eta = round(per_step * max(self.total_steps - step, 0), 1)
        self._pending = {"step": step, "totalSteps": self.total_steps, "loss": point.get("loss"),
                         "firstLoss": self._first_loss, "tokensPerSecond": point.get("tokensPerSecond"),
                         "reward": point.get("reward"),
                         "etaSeconds": eta, "validationLoss": point.get("validationLoss")}
        if time.monotonic() - self._last_progress_write >= PROGRESS_EVERY_S or step == self.total_steps:
            self.flush_progress()

    def flush_progress(self) -> None:
        if self._pending is None:
            return
        pending, self._pending = self._pending, None
        self._last_progress_write = time.monotonic()

        def progress(doc):
            doc["progress"] = {**doc["progress"], **{k: v for k, v in pending.items() if v is not None}}
            return doc

        self.update_run(progress)

    def event(self, message: str, level: str = "info") -> None:
        self.store.add_event(self.run_id, message, level=level)
        getattr(self.log, "warning" if level == "warn" else level, self.log.info)(message)

    def samples(self, sample: dict[str, Any]) -> None:
        """A GRPO step's rollout sample, stored beside the metrics; only the last SAMPLE_STEPS steps
        are kept (a step trained again after a resume is stored again: readers take its latest)."""
        self.store.add_samples(self.run_id, {**sample, "attempt": self.attempt, "time": now_iso()}, keep=SAMPLE_STEPS)

    def snapshot(self, *, step: int, key: str, directory: Path, manifest: dict[str, Any], final: bool) -> None:
        snapshot_id = new_id(Kind.SNAPSHOT)
        snapshot = {
            "id": snapshot_id,
            "kind": "snapshot",
            "run": self.run_id,
            "workload": self.workload,
            "step": step,
            "layout": manifest["layout"],
            "gpus": manifest["gpus"],
            "method": manifest["method"],
            "engine": manifest["engine"],
            "precision": manifest["precision"],
            "model": manifest["model"],
            "contents": {"weights": manifest.get("weights"), "trainingState": manifest.get("trainingState")},
            # every file's size and sha256 as written, so a snapshot damaged later reads as damaged
            # (its manifest lists them, as publish_checkpoint_as_snapshot hashed them: once)
            "files": manifest.get("files") or record(directory),
            "final": final,
            "imported": False,
            "path": key,
            "detail": None,
        }
        try:  # only while this worker still holds the run (fenced_snapshots.py)
            doc = fenced_snapshots.register(self.store, self.lease, snapshot)
        except LeaseLost:
            self.artifacts.delete(key)  # this attempt's own key: nobody else's snapshot
            raise
        self.unsaved = False
        self.event(reasons.snapshot_written(snapshot_id, step, final=final))
        self.log.info("snapshot written", snapshot=doc["id"], step=step, manifest=json.dumps(manifest))

    def stop_request(self) -> str | None:
        """None, "cancel" or "pause": what the user asked of this run since it started, or "pause"
        when its worker is stopping (then `stop` is STOP_REQUEUE: the run is given back once saved)."""
        if self.lease.lost.is_set():
            raise LeaseLost(f"lease of run {self.run_id} expired")
        if self.stop is None and stopping.current().requested.is_set():
            self.stop = STOP_REQUEUE
            self.event(reasons.worker_stopping(stopping.current().grace_s))
        if self.stop == STOP_REQUEUE:
            return STOP_PAUSE
        now = time.monotonic()
        if self.stop is None and now - self._last_cancel_check >= CANCEL_CHECK_EVERY_S:
            self._last_cancel_check = now
            doc = self.store.get(self.run_id) or {}
            if doc.get("cancelRequested"):
                self.stop = "cancel"
            elif doc.get("pauseRequested"):
                self.stop = "pause"
        return self.stop
