"""Carry out one granted claim on this node: take the lease, train, end the run, give the GPUs
back. Plain Python: the Celery task only calls `execute`.

Every Redis command the work sends rides out an outage of `redisRetryS` (shared/redis_retry.py).
Should Redis stay away longer, the work stops as if its lease were lost: it writes nothing (it
could not), is not FAILED, and the scheduler re-queues it once its lease has been gone long enough
(services/scheduler/lost.py). A run never ends FAILED because its store blinked."""

from __future__ import annotations

import os
import socket
from enum import StrEnum
from pathlib import Path
from typing import Any, Callable

from services.trainer_worker.engines.base import NothingToTrain, SnapshotDiskFull
from services.trainer_worker.engine_errors import engine_failure
from services.trainer_worker.lease import Lease, LeaseLost, fenced_move
from services.trainer_worker.process_log import ProcessLog
from services.trainer_worker.reporter import STOP_REQUEUE, CancelledWhileStarting, RunReporter
from services.trainer_worker.trackers import Trackers
from shared import logs, reasons
from shared.artifacts import ArtifactRoot, dataset_key, run_snapshots_key, run_work_key
from shared.catalog import Catalog
from shared.config import DeploymentConfig
from shared.errors import WorkFailed
from shared.keys import Keys
from shared.lifecycle.runs import RUNS
from shared.plans import TrainingPlan
from shared.redis_retry import connect_retrying, unreachable
from shared.snapshot_files import damage_of
from shared.states import EvaluationStatus, RunStatus
from shared.store import Store


class Worker:
    """What a node's worker needs to run work: config, Redis, store, artifacts."""

    def __init__(self, config: DeploymentConfig, node: str):
        self.config = config
        self.node = node
        self.redis = connect_retrying(config.redis_url, config.redis_retry_s)
        self.keys = Keys(config.key_prefix)
        self.store = Store(self.redis, self.keys)
        self.artifacts = ArtifactRoot(config.artifact_root)
        self.catalog = Catalog(config, self.artifacts)
        self.holder = f"{node}/{socket.gethostname()}/{os.getpid()}"

    def claims(self):
        from shared.claims.queue import ClaimQueue

        return ClaimQueue(self.redis, self.keys)


def execute(worker: Worker, kind: str, resource_id: str, claim_id: str) -> str:
    """Returns what happened, for the task's log: trained, scored, skipped (and why)."""
    if kind == "evaluation":
        from services.trainer_worker.evaluation_job import evaluate

        return with_lease(worker, kind, resource_id, claim_id, EvaluationStatus, evaluate)
    if kind != "run":
        logs.get("trainer_worker").error("unknown kind of work", kind=kind, node=worker.node, claim=claim_id)
        return f"skipped: kind {kind} is not run by this worker"
    return with_lease(worker, kind, resource_id, claim_id, RunStatus, _train)


def with_lease(worker: Worker, kind: str, resource_id: str, claim_id: str, status: type[StrEnum],
               work: Callable[..., str]) -> str:
    """Do `work(worker, doc, claim, lease, log)` for a granted claim's run or evaluation, holding its
    lease: skipped when the claim is no longer granted, when the resource has ended (its claim is
    released), or when a live process holds the lease (a redelivered task: never in two places).
    Work whose previous process died is given back instead (takeover.py); work this process is
    doing is given back when the worker is asked to stop (stopping.py)."""
    from services.trainer_worker import stopping, takeover

    log = logs.get("trainer_worker").bind(node=worker.node, claim=claim_id, **{kind: resource_id})
    claim = worker.claims().get(claim_id)
    doc = worker.store.get(resource_id)
    if claim is None or claim.get("state") != "GRANTED" or claim.get("resource") != resource_id:
        log.warning("claim is no longer granted; nothing to do")
        return "skipped: claim not granted"
    if doc is None or status(doc["status"]).is_terminal:
        worker.claims().release(claim_id)
        return f"skipped: {kind} already ended"
    lease = Lease(worker.redis, worker.keys, resource_id, worker.holder)
    taken = takeover.take(worker, claim, doc, lease, log)
    if taken is takeover.Taken.HELD:
        log.warning(f"{kind} is leased by another worker; not running it here")
        return "skipped: leased elsewhere"
    stop = stopping.current()
    try:
        if taken is takeover.Taken.FROM_LOST:
            return takeover.hand_back_lost(worker, claim, lease, log)
        stop.hold(stopping.Held(hand_back=lambda late: hand_back_stopped(worker, claim, lease, log, late=late),
                                stops_itself=lambda: False))
        return work(worker, doc, claim, lease, log)
    except Exception as exc:
        if not unreachable(exc):
            raise
        log.error(f"Redis stayed out of reach past {worker.config.redis_retry_s:g} s; leaving the {kind} "
                  "to be re-queued", error=f"{type(exc).__name__}: {exc}")
        return "stopped: store unreachable"
    finally:
        stop.done()
        lease.release()


def hand_back_stopped(worker: Worker, claim: dict[str, Any], lease: Lease, log, *, late: bool = False) -> str | None:
    """Give the claim's run or evaluation back because this worker is stopping (stopping.py):
    QUEUED keeping its place, through the one way back (shared/claims/orphans.py). `late`: the
    watchdog gives it back, the grace over (a run: with steps its snapshot does not hold)."""
    from services.trainer_worker import stopping
    from shared.claims.orphans import give_back

    if late and claim["kind"] == "run":
        worker.store.add_event(claim["resource"], reasons.worker_stopped_unsaved(stopping.current().grace_s),
                               level="warn")
    outcome = give_back(worker.claims(), worker.store, claim,
                        requeued_event=reasons.worker_stopped_requeued(worker.node),
                        cancelled_detail=reasons.worker_stopped_cancelled(worker.node), log=log)
    lease.release()  # at once: the next holder must not take this process for a dead one
    return outcome


def take_devices(lease: Lease, node: str, devices: list[str]):
    """The change that stamps a run's or evaluation's document with its fence and devices."""
    def take(doc: dict[str, Any]) -> dict[str, Any]:
        doc["fence"] = lease.fence
        doc["scheduling"] = {**(doc.get("scheduling") or {}), "node": node, "devices": devices}
        return doc

    return take


def _train(worker: Worker, run: dict[str, Any], claim: dict[str, Any], lease: Lease, log) -> str:
    from services.trainer_worker import stopping

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
    from services.trainer_worker import stopping

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
                    outcome = hand_back_stopped(worker, claim, lease, log)
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
                given = hand_back_stopped(worker, claim, lease, log, late=True)
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
    reporter.event(reasons.run_succeeded(result.final_step, result.first_loss, result.last_loss))
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


def use_granted_devices(worker: Worker, devices: list[str]) -> str:
    """Make this task's process use only its granted devices; returns "cuda" or "cpu".

    The child process is fresh per task (max-tasks-per-child 1) and has not touched CUDA yet: only
    the granted GPUs are exposed, which the work then sees as cuda:0..N-1. CPU slots share the
    node's cores evenly, so two tasks side by side don't fight.
    """
    cuda = [d.split(":", 1)[1] for d in devices if d.startswith("cuda:")]
    if cuda:
        os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(cuda)
        return "cuda"
    import torch

    node = worker.config.node(worker.node)
    if node is not None and node.device_kind == "cpu":
        torch.set_num_threads(node.cpu_threads())
    return "cpu"


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
