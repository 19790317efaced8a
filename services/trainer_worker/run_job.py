"""A run on this node, its lease held (leased_work.py): its reporter, the engine, and the end:
SUCCEEDED, PAUSED, CANCELLED or FAILED with a sentence, or given back when its worker stops. Where
it starts from (`restore_for`): its own newest intact snapshot, else the one it branches from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from services.trainer_worker import stopping
from services.trainer_worker.engine_errors import engine_failure
from services.trainer_worker.engines.base import NothingToTrain, SnapshotDiskFull
from services.trainer_worker.lease import Lease, LeaseLost, fenced_move
from services.trainer_worker.node_worker import Worker, take_devices, use_granted_devices
from services.trainer_worker.process_log import ProcessLog
from services.trainer_worker.reporter import STOP_REQUEUE, CancelledWhileStarting, RunReporter
from services.trainer_worker.trackers import Trackers
from shared import reasons
from shared.artifacts import dataset_key, run_snapshots_key, run_work_key
from shared.errors import WorkFailed
from shared.lifecycle.runs import RUNS
from shared.plans import TrainingPlan
from shared.redis_retry import unreachable
from shared.snapshot_files import damage_of
from shared.states import RunStatus


def train_run(worker: Worker, run: dict[str, Any], claim: dict[str, Any], lease: Lease, log) -> str:
    run_id = run["id"]
    devices = list(claim["devices"])
    run = worker.store.update(run_id, take_devices(lease, worker.node, devices))
    earlier = worker.store.metrics(run_id)  # what an earlier attempt logged: not logged twice
    reporter = RunReporter(store=worker.store, artifacts=worker.artifacts, run=run, lease=lease, log=log,
                           earlier=earlier)
    reporter.trackers = Trackers(settings=worker.config.trackers, artifacts=worker.artifacts, run=run,
                                 earlier=earlier, warn=lambda m: reporter.event(m, level="warn"))
    reporter.process_log = ProcessLog(worker.artifacts, run_id).attach()
    reporter.process_log.write(reasons.process_log_started(holder=worker.holder, attempt=reporter.attempt))
    stopping.current().stops_itself(lambda: reporter.unsaved)  # it saves them at its next step boundary
    stopping.current().writes_first(reporter.flush_progress)  # given back by the watchdog: its last step shown
    reporter.event(reasons.work_taken(worker.holder, "run", devices, lease.fence))
    try:
        return _train_and_end(worker, run, claim, lease, log, devices, reporter)
    finally:
        reporter.trackers.close(None)  # stopped without an outcome (lease lost, store away); else a no-op
        # a run across several devices: each rank's own output, where its traceback is
        reporter.process_log.rank_outputs(_work_dir(worker, run) / "ranks")
        reporter.process_log.detach()


def _train_and_end(worker: Worker, run: dict[str, Any], claim: dict[str, Any], lease: Lease, log,
                   devices: list[str], reporter: RunReporter) -> str:
    detail = None
    try:
        if reporter.stop_request() == "cancel":
            outcome, detail = RunStatus.CANCELLED.value, reasons.CANCELLED_BY_USER
        else:
            result = _run_engine(worker, run, devices, reporter)
            reporter.flush_progress()
            if result.paused and reporter.stop == STOP_REQUEUE:  # its worker is stopping: saved, give it back
                reporter.trackers.close(None)
                with stopping.current().ending():
                    outcome = stopping.hand_back(worker, claim, lease, log)
                log.info("run given back: its worker is stopping", outcome=outcome, step=result.final_step)
                return f"{outcome}: worker stopping" if outcome else "stopped: no longer this claim's"
            if result.paused:
                outcome = RunStatus.PAUSED.value
            elif result.stopped_early and reporter.stop == "cancel":
                outcome, detail = RunStatus.CANCELLED.value, reasons.CANCELLED_BY_USER
            else:
                outcome, detail = _ended(run, result, reporter)
    except LeaseLost as exc:
        log.warning("lease lost; leaving the run to its new holder", error=str(exc))
        return "stopped: lease lost"
    except SnapshotDiskFull as exc:  # not a failure: paused, resumable once space is freed (issue 26)
        outcome, detail = RunStatus.PAUSED.value, str(exc)
        reporter.event(detail, level="warn")
    except NothingToTrain as nothing:  # before its first step: never SUCCEEDED in silence (issue 30)
        outcome, detail = _nothing_trained(run, nothing, reporter)
    except CancelledWhileStarting:  # cancelled while its engine loaded: not one step trained
        outcome, detail = RunStatus.CANCELLED.value, reasons.CANCELLED_BY_USER
    except Exception as exc:  # the engine failed: the run says why, the worker lives on
        if unreachable(exc):
            raise  # not the engine: its store (with_lease leaves the run to be re-queued)
        if stopping.current().requested.is_set():
            # Its worker is stopping, and the stop may have reached a process the engine needs (a
            # rollout server in the worker's process group): given back, not failed for it.
            log.warning("the engine stopped with an error as its worker stops; giving the run back",
                        error=f"{type(exc).__name__}: {exc}")
            reporter.trackers.close(None)
            with stopping.current().ending():
                given = stopping.hand_back(worker, claim, lease, log, late=True)
            return f"{given}: worker stopping" if given else "stopped: no longer this claim's"
        log.exception("run failed")
        reporter.process_log.traceback(exc)
        outcome, detail = RunStatus.FAILED.value, reasons.run_failed(engine_failure(exc, run).sentence)
        reporter.event(detail, level="error")

    # Before the run reads as ended: whoever sees it SUCCEEDED finds its tracker files complete.
    reporter.trackers.close(outcome)
    with stopping.current().ending():  # a stop arriving now does not give back a run that is ending
        try:
            fenced_move(worker.store, lease, RUNS, outcome, detail=detail, pauseRequested=False)
        except LeaseLost:
            return "stopped: lease lost"
        worker.claims().release(claim["id"])
    if outcome == RunStatus.CANCELLED.value:
        reporter.event(reasons.CANCELLED_BY_USER)
    elif outcome == RunStatus.PAUSED.value and detail is None:  # paused by the user
        reporter.event(reasons.run_paused_by_user(reporter.last_step))
    log.info("run ended", status=outcome)
    return outcome


def _ended(run: dict[str, Any], result, reporter: RunReporter) -> tuple[str, str | None]:
    """(status, detail) of a run whose engine finished its steps; one that took none is never a
    silent success (issue 30: `_nothing_trained`)."""
    if result.trained_steps == 0:
        return _nothing_trained(run, NothingToTrain(start_step=result.start_step, end_step=result.final_step),
                                reporter)
    # the run's first loss, not this attempt's: a resumed run's summary covers the whole run
    first = reporter.first_loss if reporter.first_loss is not None else result.first_loss
    reporter.event(reasons.run_succeeded(result.final_step, first, result.last_loss))
    return RunStatus.SUCCEEDED.value, None


def _nothing_trained(run: dict[str, Any], nothing: NothingToTrain, reporter: RunReporter) -> tuple[str, str | None]:
    """A run whose engine took no step: FAILED saying why, unless it resumed its own snapshot of its
    last step (its worker was lost after writing it), which ends SUCCEEDED with a warn event saying
    that nothing was left to train."""
    docs = reporter.store.get_many(run.get("snapshots") or [])
    own = [int(doc["step"]) for doc in docs if (doc.get("contents") or {}).get("trainingState")]
    if own and max(own) >= nothing.start_step >= nothing.end_step:
        reporter.event(reasons.run_nothing_left_to_train(nothing.start_step), level="warn")
        return RunStatus.SUCCEEDED.value, None
    detail = reasons.run_failed(nothing.sentence)
    reporter.event(detail, level="error")
    return RunStatus.FAILED.value, detail


def restore_for(worker: Worker, run: dict[str, Any], reporter: Any = None):
    """Where a run starts from: its own newest intact snapshot with training state (it was paused,
    or its worker was lost), else the snapshot it branches from, else nothing.

    Every snapshot it would restore is checked file by file first (sizes and sha256,
    shared/snapshot_files.py): a damaged one of its own is passed over for the next older one, with
    a warn event; one it cannot do without (a damaged branch source, or none of its own intact)
    fails the run with a sentence naming the snapshot and the file, before any model is loaded."""
    from services.trainer_worker.engines.base import Restore

    own = [doc for doc in worker.store.get_many(reversed(run.get("snapshots") or []))
           if (doc.get("contents") or {}).get("trainingState")]
    first_damage = None
    for doc in own:
        found = damage_of(worker.artifacts, doc, "weights", "trainingState", deep=True)
        if found is None:
            if first_damage is not None and reporter is not None:
                reporter.event(reasons.snapshot_resumed_from_older(*first_damage, doc["id"], doc["step"]),
                               level="warn")
            return Restore(what="trainingState", snapshot_dir=worker.artifacts.get_dir(doc["path"]))
        first_damage = first_damage or (doc["id"], found.file, found.problem)
    if first_damage is not None:
        raise WorkFailed(reasons.snapshot_damaged(*first_damage))
    branch = TrainingPlan.from_dict(run["plan"]).restore
    if branch is not None:
        parent = worker.store.require(branch.snapshot, "snapshot")
        parts = ("weights", "trainingState") if branch.what == "trainingState" else ("weights",)
        found = damage_of(worker.artifacts, parent, *parts, deep=True)
        if found is not None:
            raise WorkFailed(reasons.snapshot_damaged(parent["id"], found.file, found.problem))
        return Restore(what=branch.what, snapshot_dir=worker.artifacts.get_dir(parent["path"]))
    return None


def _work_dir(worker: Worker, run: dict[str, Any]) -> Path:
    return worker.artifacts.scratch(run_work_key(run["id"], int(run.get("attempts") or 0)))


def _run_engine(worker: Worker, run: dict[str, Any], devices: list[str], reporter: RunReporter):
    use_granted_devices(worker, devices)
    from services.trainer_worker.engines import train
    from services.trainer_worker.engines.base import TrainingJob
    from shared.judges import JudgeAddresses
    from shared.models import model_dir_for

    plan = TrainingPlan.from_dict(run["plan"])
    model_dir = model_dir_for(worker.catalog.raw(plan.model), worker.artifacts)
    job = TrainingJob(
        run_id=run["id"],
        plan=plan,
        engine=run["engine"],
        model_dir=Path(model_dir),
        dataset_path=worker.artifacts.get_file(dataset_key(run["datasetDigest"])),
        work_dir=_work_dir(worker, run),
        devices=devices,
        restore=restore_for(worker, run, reporter),
        judge_address=JudgeAddresses(worker.config.redis_url, worker.config.key_prefix,
                                     workloads=dict(run.get("judgeWorkloads") or {})),
        reward_functions=dict(worker.config.reward_functions),
        validation_path=(worker.artifacts.get_file(dataset_key(run["validationDatasetDigest"]))
                         if run.get("validationDatasetDigest") else None),
        artifacts=worker.artifacts,
        snapshot_prefix=run_snapshots_key(run["id"], int(run.get("attempts") or 0)),  # each attempt its own keys
    )
    if job.restore is not None:
        reporter.event(reasons.restoring(job.restore.what, job.restore.snapshot_dir.name))
    return train(job, reporter)
