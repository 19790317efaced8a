"""The Redis-backed reporter an engine talks to (engines.base.Reporter): metrics, events,
progress, snapshots and cancellation, each write fenced by the worker's lease. Every metrics point
also goes to the deployment's trackers (trackers/: TensorBoard, MLflow, W&B) once it is stored.

A run that resumes after a lost process trains the steps after its latest snapshot again; their
points are not logged twice (each metric name at each step once, as trackers/scalars.py sends
them), so the series holds every step once. Training resumes exactly, so the points kept are what
the steps trained again report too. The run's first loss (`progress.firstLoss`, and the summary of
its success event) is its first step's, whichever attempt trained it, never the resume point's."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Iterable

from services.trainer_worker import fenced_snapshots, stopping
from services.trainer_worker.engines.base import STOP_PAUSE
from services.trainer_worker.lease import Lease, LeaseLost, fenced_move
from services.trainer_worker.trackers.scalars import SentSteps
from services.trainer_worker.work_reporter import WorkReporter
from shared import reasons
from shared.lifecycle.runs import RUNS
from shared.lifecycle.states import RunStatus
from shared.snapshots.files import record
from shared.store.artifacts import ArtifactRoot
from shared.store.documents import Store
from shared.store.ids import Kind, new_id
from shared.store.rollout_samples import SAMPLE_STEPS
from shared.store.times import now_iso

PROGRESS_EVERY_S = 0.25
# What `RunReporter.stop` holds when its worker is stopping: the engine is asked to pause (a snapshot
# at the step boundary), and the run is then given back to the queue (stopping.py).
STOP_REQUEUE = "requeue"


def first_loss(points: Iterable[dict[str, Any]]) -> float | None:
    """The training loss at the lowest step of a run's series (validation points carry none)."""
    losses = [(int(p.get("step") or 0), float(p["loss"])) for p in points if p.get("loss") is not None]
    return min(losses)[1] if losses else None


class CancelledWhileStarting(Exception):
    """The user cancelled the run while its engine loaded: it ends CANCELLED before its first step."""


class RunReporter(WorkReporter):
    """What a run's engine reports through (engines.base.Reporter): progress, metrics, events,
    snapshots, and the user's cancel or pause."""

    kind = "run"

    def __init__(self, *, store: Store, artifacts: ArtifactRoot, run: dict[str, Any], lease: Lease, log,
                 trackers=None, earlier: Iterable[dict[str, Any]] | None = None):
        super().__init__(store=store, lease=lease, log=log, resource_id=run["id"])
        self.artifacts = artifacts
        self.run_id = run["id"]
        self.workload = run["workload"]
        self.attempt = int(run.get("attempts") or 0)  # a re-queued run trains some steps again
        self.total_steps: int | None = None
        self.last_step = int((run.get("progress") or {}).get("step") or 0)
        self._started_at: float | None = None
        self._first_step: int | None = None
        earlier = list(store.metrics(self.run_id) if earlier is None else earlier)
        # The run's first loss, over every attempt: what an earlier one recorded (its progress, or its
        # series, whose progress write a lost worker may not have made), else this attempt's first.
        self._first_loss: float | None = (run.get("progress") or {}).get("firstLoss")
        if self._first_loss is None:
            self._first_loss = first_loss(earlier)
        self._last_progress_write = 0.0
        self._pending: dict[str, Any] | None = None
        self.stop: str | None = None  # None, "cancel" or "pause" (the user's), STOP_REQUEUE (its worker's)
        self.trackers = trackers  # trackers.Trackers, or None: the run's series only
        # (name, step) already in the run's series, from an earlier attempt: not logged again
        self.logged = SentSteps(earlier)
        self.unsaved = False  # a step trained here since the last snapshot written here
        self.process_log = None  # process_log.ProcessLog: events and points go to it too (issue 30)

    @property
    def first_loss(self) -> float | None:
        """The loss of the run's first step, whichever attempt trained it (None before any)."""
        return self._first_loss

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
        if self.process_log is not None:
            self.process_log.write(json.dumps(point))
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

        self.update(progress)

    def event(self, message: str, level: str = "info") -> None:
        if self.process_log is not None:
            self.process_log.write(f"{level.upper()} {message}")
        super().event(message, level)

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

    def memory(self, *, estimate_gib: float | None = None, activation_checkpointing: bool | None = None,
               measured_as: str | None = None, ranks: list[dict[str, Any]] | None = None) -> None:
        """The run's `memory`: its estimate per device, then every rank's measured peak; a warn event
        when the peak is above the estimate (`peak_above_estimate`)."""
        def change(doc):
            doc["memory"] = with_memory_report(doc.get("memory"), estimate_gib=estimate_gib, ranks=ranks,
                                               activation_checkpointing=activation_checkpointing,
                                               measured_as=measured_as)
            return doc

        memory = self.update(change)["memory"]
        over = peak_above_estimate(memory) if ranks is not None else None
        if over is not None:
            self.event(reasons.memory_peak_above_estimate(peak_gib=over["peakGiB"], estimate_gib=memory["estimateGiB"],
                                                          rank=over["rank"], measured_as=memory["measuredAs"]),
                       level="warn")

    def stop_request(self) -> str | None:
        """None, "cancel" or "pause": what the user asked of this run since it started, or "pause"
        when its worker is stopping (then `stop` is STOP_REQUEUE: the run is given back once saved)."""
        self.check_lease()
        if self.stop is None and stopping.current().requested.is_set():
            self.stop = STOP_REQUEUE
            self.event(reasons.worker_stopping(stopping.current().grace_s))
        if self.stop == STOP_REQUEUE:
            return STOP_PAUSE
        if self.stop is None and (doc := self.read_requests()) is not None:
            if doc.get("cancelRequested"):
                self.stop = "cancel"
            elif doc.get("pauseRequested"):
                self.stop = "pause"
        return self.stop


# --- A run's memory: estimated, then measured (engines/peak_memory.py)


def with_memory_report(memory: dict[str, Any] | None, *, estimate_gib: float | None = None,
                       activation_checkpointing: bool | None = None, measured_as: str | None = None,
                       ranks: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The run's `memory` with one report applied: an estimate (which starts an attempt afresh: its
    peak is measured again), or the ranks' peaks (`peakGiB` is the largest)."""
    memory = dict(memory or {"estimateGiB": None, "peakGiB": None, "ranks": []})
    if estimate_gib is not None:
        memory.update(estimateGiB=round(float(estimate_gib), 3), activationCheckpointing=activation_checkpointing,
                      measuredAs=measured_as, peakGiB=None, ranks=[])
    if ranks is not None:
        memory.update(ranks=list(ranks), peakGiB=max((r["peakGiB"] for r in ranks), default=None))
    return memory


def peak_above_estimate(memory: dict[str, Any]) -> dict[str, Any] | None:
    """The rank whose measured peak is above the run's estimate (the highest), or None: within it,
    or one of the two not known."""
    estimate = memory.get("estimateGiB")
    if estimate is None or not memory.get("ranks"):
        return None
    highest = max(memory["ranks"], key=lambda r: r["peakGiB"])
    return highest if highest["peakGiB"] > estimate else None
