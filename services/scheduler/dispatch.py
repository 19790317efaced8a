"""What the scheduler writes after a grant pass: it hands granted work to the node holding the
devices and gives back devices whose work has ended. (Queue positions are not written: they are
derived at read time, shared/claims/waiting.py.)

An endpoint is not sent a task: its claim moves it QUEUED -> STARTING, and the endpoint manager
of the node (services/endpoint_manager) finds it among the node's granted endpoint claims.

Dispatch is idempotent. If the scheduler dies between a grant and its dispatch, the next pass
finds the GRANTED claim without `dispatchedAt` and dispatches it again, unless the task it sent
before dying still waits in the node's queue (its task id is the claim id); the worker's lease
makes sure a task delivered twice never trains in two places.
"""

from __future__ import annotations

import json
from typing import Any

import structlog

from shared import reasons
from shared.celery_app import EXECUTE_TASK, node_queue
from shared.config import DeploymentConfig
from shared.errors import NotFound
from shared.states import (
    ClaimState,
    EndpointPhase,
    EvaluationStatus,
    RunStatus,
    endpoint_transition,
    evaluation_transition,
    run_transition,
)
from shared.store import Store
from shared.times import now_iso

from shared.claims.queue import ClaimQueue

# Statuses in which a resource no longer needs devices, from each kind's state machine.
_RUN_DONE = frozenset(RunStatus.terminal() | {RunStatus.PAUSED})
_EVALUATION_DONE = EvaluationStatus.terminal()
# Two schedulers never dispatch one claim at once: the first takes this lock. One that dies
# holding it delays a re-dispatch by this long, and the re-dispatch checks the broker queue first.
DISPATCH_LOCK_S = 10
# Kinds whose work is a Celery task on the node's worker: their status enum and state machine.
TASK_KINDS = {
    "run": (RunStatus, run_transition),
    "evaluation": (EvaluationStatus, evaluation_transition),
}


granted_sentence = reasons.granted  # kept for callers of the old name


def needs_no_devices(kind: str, doc: dict[str, Any] | None) -> bool:
    """True when the claim's resource is gone or has ended, so its claim can be released."""
    if doc is None:
        return True
    if kind == "endpoint":
        return doc.get("phase") in EndpointPhase.terminal()
    if kind == "evaluation":
        return doc.get("status") in _EVALUATION_DONE
    return doc.get("status") in _RUN_DONE


def _bound(log: Any, claim: dict[str, Any]) -> Any:
    return log.bind(claim=claim["id"], **{claim["kind"]: claim["resource"]})


def _start_task(store: Store, claim: dict[str, Any]) -> str:
    """Move the claim's run or evaluation QUEUED -> STARTING. Returns started | resend | gone."""
    outcome = "gone"
    status, transition = TASK_KINDS[claim["kind"]]

    def change(doc: dict[str, Any]) -> dict[str, Any] | None:
        nonlocal outcome
        scheduling = doc.get("scheduling") or {}
        if doc.get("status") == status.QUEUED:
            outcome = "started"
            doc["status"] = transition(doc["status"], status.STARTING).value
            doc["scheduling"] = {
                **scheduling, "claim": claim["id"], "node": claim["node"],
                "devices": claim["devices"], "position": None,
            }
            return doc
        if scheduling.get("claim") == claim["id"] and doc.get("status") in (status.STARTING, status.RUNNING):
            outcome = "resend"  # started before the scheduler stopped, but maybe never sent
        else:
            outcome = "gone"
        return None

    try:
        store.update(claim["resource"], change)
    except NotFound:
        return "gone"
    return outcome


def _start_endpoint(store: Store, claim: dict[str, Any]) -> str:
    """Move the claim's endpoint QUEUED -> STARTING on the claim's devices; its start timeout runs
    from now. Returns started | resend (already started under this claim) | gone."""
    outcome = "gone"

    def change(doc: dict[str, Any]) -> dict[str, Any] | None:
        nonlocal outcome
        scheduling = doc.get("scheduling") or {}
        if doc.get("phase") == EndpointPhase.QUEUED:
            outcome = "started"
            doc["phase"] = endpoint_transition(doc["phase"], EndpointPhase.STARTING).value
            doc["scheduling"] = {**scheduling, "claim": claim["id"], "node": claim["node"],
                                 "devices": claim["devices"]}
            doc["startingSince"] = now_iso()
            return doc
        started = doc.get("phase") in (EndpointPhase.STARTING, EndpointPhase.READY)
        outcome = "resend" if started and scheduling.get("claim") == claim["id"] else "gone"
        return None

    try:
        store.update(claim["resource"], change)
    except NotFound:
        return "gone"
    return outcome


def dispatch_claim(*, queue: ClaimQueue, store: Store, celery_app: Any, claim: dict[str, Any], log: Any) -> bool:
    """Hand one granted claim's work to its node. Returns False when the claim was released instead."""
    log = _bound(log, claim)
    if not store.redis.set(store.keys.dispatching(claim["id"]), "1", nx=True, ex=DISPATCH_LOCK_S):
        return False  # another scheduler is dispatching it right now
    if (queue.current(claim["resource"]) or {}).get("id") != claim["id"]:
        outcome = "gone"  # the resource was cancelled or re-queued under another claim
    elif claim["kind"] in TASK_KINDS:
        outcome = _start_task(store, claim)
    elif claim["kind"] == "endpoint":
        outcome = _start_endpoint(store, claim)
    else:
        outcome = "started" if store.get(claim["resource"]) is not None else "gone"
    if outcome == "gone":
        queue.release(claim["id"])
        log.info("claim released: its resource no longer waits for it")
        return False
    if outcome == "started":
        sentence = reasons.granted(gpus=claim["gpus"], node=claim["node"], devices=claim["devices"])
        store.add_event(claim["resource"], sentence)
    # An endpoint gets no task: the node's endpoint manager starts it.
    if claim["kind"] != "endpoint" and (outcome == "started" or not _still_queued(store, claim)):
        celery_app.send_task(
            EXECUTE_TASK, args=[claim["kind"], claim["resource"], claim["id"]],
            queue=node_queue(claim["node"]), task_id=claim["id"],
        )
    queue.mark_dispatched(claim["id"])
    log.info("dispatched", node=claim["node"], devices=claim["devices"], resent=outcome == "resend")
    return True


def _still_queued(store: Store, claim: dict[str, Any]) -> bool:
    """True when a task for this claim already waits in its node's broker queue (sent by a
    scheduler that stopped before stamping `dispatchedAt`)."""
    key = store.keys.celery_prefix() + node_queue(claim["node"])
    return any(claim["id"] in message for message in store.redis.lrange(key, 0, -1))


def dispatch_granted(
    *, queue: ClaimQueue, store: Store, celery_app: Any, config: DeploymentConfig, log: Any = None
) -> list[dict[str, Any]]:
    """Dispatch every granted claim of every pool that has not been dispatched yet."""
    log = log or structlog.get_logger()
    done = []
    for pool in config.pools:
        for claim in queue.held(pool):
            if claim["state"] == ClaimState.GRANTED and not claim.get("dispatchedAt"):
                if dispatch_claim(queue=queue, store=store, celery_app=celery_app, claim=claim, log=log):
                    done.append(claim)
    return done


def sweep(*, queue: ClaimQueue, store: Store, config: DeploymentConfig, log: Any = None) -> list[dict[str, Any]]:
    """Release claims (held or waiting) whose resource is gone or has ended.

    Covers a worker that ended without releasing its claim, and a cancel that did not reach the
    queue. Returns the released claims.
    """
    log = log or structlog.get_logger()
    released = []
    for pool in config.pools:
        claims = queue.held(pool) + queue.waiting(pool)
        docs = store.redis.mget([store.keys.resource(c["resource"]) for c in claims]) if claims else []
        for claim, raw in zip(claims, docs):
            if needs_no_devices(claim["kind"], json.loads(raw) if raw else None):
                released.append(queue.release(claim["id"]))
                _bound(log, claim).info("claim released: its resource has ended", state=claim["state"])
    return released
