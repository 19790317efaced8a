"""Carry out one granted claim on this node: take the lease of its run or evaluation, do the work
(run_job.py, evaluation_job.py), give the GPUs back. Plain Python: the Celery task only calls `execute`.

Every Redis command the work sends rides out an outage of `redisRetryS` (shared/store/redis_retry.py).
Should Redis stay away longer, the work stops as if its lease were lost: it writes nothing (it
could not), is not FAILED, and the scheduler re-queues it once its lease has been gone long enough
(services/scheduler/lost.py). A run never ends FAILED because its store blinked."""

from __future__ import annotations

from enum import StrEnum
from typing import Callable

from services.trainer_worker import stopping, takeover
from services.trainer_worker.evaluation_job import evaluate
from services.trainer_worker.lease import Lease
from services.trainer_worker.node_worker import Worker
from services.trainer_worker.run_job import train_run
from shared.lifecycle.states import EvaluationStatus, RunStatus
from shared.process import logs
from shared.store.redis_retry import unreachable


def execute(worker: Worker, kind: str, resource_id: str, claim_id: str) -> str:
    """Returns what happened, for the task's log: trained, scored, skipped (and why)."""
    if kind == "evaluation":
        return with_lease(worker, kind, resource_id, claim_id, EvaluationStatus, evaluate)
    if kind != "run":
        logs.get("trainer_worker").error("unknown kind of work", kind=kind, node=worker.node, claim=claim_id)
        return f"skipped: kind {kind} is not run by this worker"
    return with_lease(worker, kind, resource_id, claim_id, RunStatus, train_run)


def with_lease(worker: Worker, kind: str, resource_id: str, claim_id: str, status: type[StrEnum],
               work: Callable[..., str]) -> str:
    """Do `work(worker, doc, claim, lease, log)` for a granted claim's run or evaluation, holding its
    lease: skipped when the claim is no longer granted, when the resource has ended (its claim is
    released), or when a live process holds the lease (a redelivered task: never in two places).
    Work whose previous process died is given back instead (takeover.py); work this process is
    doing is given back when the worker is asked to stop (stopping.py)."""
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
        stop.hold(stopping.Held(hand_back=lambda late: stopping.hand_back(worker, claim, lease, log, late=late),
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
