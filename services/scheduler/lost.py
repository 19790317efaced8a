"""Runs and evaluations whose worker was lost go back to the queue keeping their place (SPEC 2.3, 2.5).

A worker holds `lease:RUN` while it runs a run, `lease:EVAL` while it scores an evaluation (30 s TTL,
renewed every 5 s; see services/trainer_worker/lease.py). Each pass looks at the granted, dispatched run claims: when the
run is STARTING or RUNNING and its lease has been absent for longer than `worker_lost_after_s`
(measured from the later of `dispatchedAt` and the last time a pass saw the lease, `leaseSeenAt`
on the claim, so a task still waiting to be picked up is not declared lost too fast), the run goes
back to QUEUED under a new claim with the old claim's `seq`, and its `attempts` grows by one. A run
whose cancel was requested is CANCELLED instead.

What counts as orphaned and how it goes back is shared with a worker that restarts on its node
(shared/claims/orphans.py; services/trainer_worker/reclaim.py, which finds its node's orphans at
start-up without waiting for this grace period).

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
from shared.claims.orphans import LEASED_KINDS, give_back, in_workers_hands
from shared.claims.queue import ClaimQueue
from shared.config import DeploymentConfig
from shared.store import Store
from shared.times import epoch, iso

# `leaseSeenAt` is written at most this often per claim, so a pass does not rewrite every claim.
LEASE_SEEN_WRITE_S = 10.0


def requeue_lost(
    *, queue: ClaimQueue, store: Store, config: DeploymentConfig, now: float | None = None, log: Any = None
) -> list[dict[str, Any]]:
    """Re-queue (or cancel) the runs and evaluations whose worker was lost. Returns the claims given up."""
    log = log or structlog.get_logger()
    now = time.time() if now is None else now
    lost = []
    for pool in config.pools:
        claims = [c for c in queue.held(pool) if c["kind"] in LEASED_KINDS and c.get("dispatchedAt")]
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
            lifecycle, _ = LEASED_KINDS[claim["kind"]]
            if doc.get(lifecycle.field) == lifecycle.states.QUEUED and scheduling.get("claim") not in (None, claim["id"]):
                if queue.get(scheduling["claim"]) is None:  # a re-queue cut short: finish it
                    queue.requeue(claim["id"], new_claim_id=scheduling["claim"])
                continue
            if not in_workers_hands(claim, doc):
                continue
            if leased:
                if now - (epoch(claim.get("leaseSeenAt")) or 0.0) >= LEASE_SEEN_WRITE_S:
                    queue.touch_lease(claim["id"], iso(now))
                continue
            since = max(epoch(claim["dispatchedAt"]) or 0.0, epoch(claim.get("leaseSeenAt")) or 0.0)
            if now - since > config.worker_lost_after_s and give_back(
                    queue, store, claim, requeued_event=reasons.worker_lost_requeued(claim["node"]),
                    cancelled_detail=reasons.worker_lost_cancelled(claim["node"]), log=log):
                lost.append(claim)
    return lost
