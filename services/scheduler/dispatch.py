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
from shared.claims.orphans import task_waiting
from shared.claims.queue import ClaimQueue
from shared.config.deployment import DeploymentConfig
from shared.lifecycle import endpoints as endpoint_lifecycle
from shared.lifecycle import evaluations, runs
from shared.lifecycle.evaluations import EVALUATIONS
from shared.lifecycle.runs import RUNS
from shared.lifecycle.states import ClaimState, EndpointPhase
from shared.messaging.celery_app import EXECUTE_TASK, node_queue
from shared.store.documents import Store

# Two schedulers never dispatch one claim at once: the first takes this lock. One that dies
# holding it delays a re-dispatch by this long, and the re-dispatch checks the broker queue first.
DISPATCH_LOCK_S = 10
# Kinds whose work is a Celery task on the node's worker: their lifecycle, and the states in which
# they need no devices any more.
TASK_KINDS = {"run": (RUNS, runs.DONE), "evaluation": (EVALUATIONS, evaluations.DONE)}




def needs_no_devices(kind: str, doc: dict[str, Any] | None) -> bool:
    """True when the claim's resource is gone or has ended, so its claim can be released."""
    if doc is None:
        return True
    if kind == "endpoint":
        return doc.get("phase") in EndpointPhase.terminal()
    lifecycle, done = TASK_KINDS.get(kind, TASK_KINDS["run"])
    return doc.get(lifecycle.field) in done


def _bound(log: Any, claim: dict[str, Any]) -> Any:
    return log.bind(claim=claim["id"], **{claim["kind"]: claim["resource"]})


def _start_task(store: Store, claim: dict[str, Any]) -> str:
    """Move the claim's run or evaluation QUEUED -> STARTING. Returns started | resend | gone."""
    lifecycle, _ = TASK_KINDS[claim["kind"]]
    scheduling = {"claim": claim["id"], "node": claim["node"], "devices": claim["devices"], "position": None}
    started = lifecycle.move(store, claim["resource"], lifecycle.states.STARTING, expect={lifecycle.states.QUEUED},
                             change=lambda doc: {**doc, "scheduling": {**(doc.get("scheduling") or {}), **scheduling}})
    if started is not None:
        return "started"
    doc = store.get(claim["resource"]) or {}
    if (doc.get("scheduling") or {}).get("claim") == claim["id"] and doc.get(lifecycle.field) in (
            lifecycle.states.STARTING, lifecycle.states.RUNNING):
        return "resend"  # started before the scheduler stopped, but maybe never sent
    return "gone"


def _start_endpoint(store: Store, claim: dict[str, Any]) -> str:
    """Move the claim's endpoint QUEUED -> STARTING on the claim's devices; its start timeout runs
    from now. Returns started | resend (already started under this claim) | gone."""
    started = endpoint_lifecycle.record(
        store, claim["resource"], expect={EndpointPhase.QUEUED}, **endpoint_lifecycle.restarting(),
        change=lambda doc: {**doc, "scheduling": {**(doc.get("scheduling") or {}), "claim": claim["id"],
                                                  "node": claim["node"], "devices": claim["devices"]}})
    if started is not None:
        return "started"
    doc = store.get(claim["resource"]) or {}
    granted = doc.get("phase") in (EndpointPhase.STARTING, EndpointPhase.READY)
    return "resend" if granted and (doc.get("scheduling") or {}).get("claim") == claim["id"] else "gone"


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
    return task_waiting(store, claim)


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
