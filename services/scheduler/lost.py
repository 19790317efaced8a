"""Runs and evaluations whose worker was lost go back to the queue keeping their place (SPEC 2.3, 2.5).

A worker holds `lease:RUN` while it runs a run, `lease:EVAL` while it scores an evaluation (30 s TTL,
renewed every 5 s; see services/trainer_worker/lease.py). Each pass looks at the granted, dispatched run claims: when the
run is STARTING or RUNNING and its lease has been absent for longer than `worker_lost_after_s`
(measured from the later of `dispatchedAt` and the last time a pass saw the lease, `leaseSeenAt`
on the claim, so a task still waiting to be picked up is not declared lost too fast), the run goes
back to QUEUED under a new claim with the old claim's `seq`, and its `attempts` grows by one. A run
whose cancel was requested is CANCELLED instead.

The run document is changed first (it names its new claim id), then the claim is re-queued in one
transaction. A scheduler that stops in between leaves a QUEUED run pointing at a claim that does
not exist yet; the next pass finds its old claim and finishes the re-queue.
"""

from __future__ import annotations

import json
import time
from typing import Any

import structlog

from shared import reasons
from shared.claims.queue import ClaimQueue
from shared.config import DeploymentConfig
from shared.ids import Kind, new_id
from shared.lifecycle import evaluations, runs
from shared.lifecycle.evaluations import EVALUATIONS
from shared.lifecycle.runs import RUNS
from shared.store import Store
from shared.times import epoch, iso

# `leaseSeenAt` is written at most this often per claim, so a pass does not rewrite every claim.
LEASE_SEEN_WRITE_S = 10.0
# Kinds a worker carries out under a lease: their lifecycle and the states in which a worker holds
# them. An evaluation keeps nothing half-done: re-queued, it scores every row again.
_LEASED_KINDS = {"run": (RUNS, runs.ACTIVE), "evaluation": (EVALUATIONS, evaluations.ACTIVE)}




def requeue_lost(
    *, queue: ClaimQueue, store: Store, config: DeploymentConfig, now: float | None = None, log: Any = None
) -> list[dict[str, Any]]:
    """Re-queue (or cancel) the runs and evaluations whose worker was lost. Returns the claims given up."""
    log = log or structlog.get_logger()
    now = time.time() if now is None else now
    lost = []
    for pool in config.pools:
        claims = [c for c in queue.held(pool) if c["kind"] in _LEASED_KINDS and c.get("dispatchedAt")]
        if not claims:
            continue
        pipe = store.redis.pipeline(transaction=False)
        for claim in claims:
            pipe.exists(store.keys.lease(claim["resource"]))
        pipe.mget([store.keys.resource(c["resource"]) for c in claims])
        *leases, raws = pipe.execute()
        for claim, leased, raw in zip(claims, leases, raws):
            doc = json.loads(raw) if raw else None
            if doc is None:
                continue  # the sweep releases claims of vanished runs
            scheduling = doc.get("scheduling") or {}
            lifecycle, active = _LEASED_KINDS[claim["kind"]]
            if doc.get(lifecycle.field) == lifecycle.states.QUEUED and scheduling.get("claim") not in (None, claim["id"]):
                if queue.get(scheduling["claim"]) is None:  # a re-queue cut short: finish it
                    queue.requeue(claim["id"], new_claim_id=scheduling["claim"])
                continue
            if doc.get(lifecycle.field) not in active or scheduling.get("claim") != claim["id"]:
                continue
            if leased:
                if now - (epoch(claim.get("leaseSeenAt")) or 0.0) >= LEASE_SEEN_WRITE_S:
                    queue.touch_lease(claim["id"], iso(now))
                continue
            since = max(epoch(claim["dispatchedAt"]) or 0.0, epoch(claim.get("leaseSeenAt")) or 0.0)
            if now - since > config.worker_lost_after_s and _give_up(queue, store, claim, log):
                lost.append(claim)
    return lost


def _give_up(queue: ClaimQueue, store: Store, claim: dict[str, Any], log: Any) -> bool:
    """Move the run (or evaluation) of a lost worker back to QUEUED (or to CANCELLED), then its claim."""
    new_claim_id = new_id(Kind.CLAIM)
    lifecycle, active = _LEASED_KINDS[claim["kind"]]
    states = lifecycle.states

    def target(doc: dict[str, Any]):
        # A cancel the user asked for while the worker held it ends it; anything else waits again.
        return states.CANCELLED if doc.get("cancelRequested") else states.QUEUED

    def details(doc: dict[str, Any]) -> dict[str, Any]:
        if doc[lifecycle.field] == states.CANCELLED:
            doc["detail"] = reasons.worker_lost_cancelled(claim["node"])
        else:
            doc["attempts"] = int(doc.get("attempts") or 0) + 1
            doc["scheduling"] = {**(doc.get("scheduling") or {}), "claim": new_claim_id, "node": None, "devices": [],
                                 "position": None}
        return doc

    moved = lifecycle.move(store, claim["resource"], target, expect=active, claim=claim["id"], change=details)
    outcome = None if moved is None else ("cancelled" if moved[lifecycle.field] == states.CANCELLED else "requeued")
    bound = log.bind(claim=claim["id"], node=claim["node"], **{claim["kind"]: claim["resource"]})
    if outcome == "requeued":
        queue.requeue(claim["id"], new_claim_id=new_claim_id)
        store.add_event(claim["resource"], reasons.worker_lost_requeued(claim["node"]), level="warn")
        bound.warning("worker lost; re-queued", kind=claim["kind"], newClaim=new_claim_id)
    elif outcome == "cancelled":
        queue.release(claim["id"])
        store.add_event(claim["resource"], reasons.worker_lost_cancelled(claim["node"]), level="warn")
        bound.warning("worker lost; cancel-requested work cancelled", kind=claim["kind"])
    return outcome is not None
