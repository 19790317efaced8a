"""Runs and evaluations whose worker was lost go back to the queue keeping their place (SPEC 2.3, 2.5).

A worker holds `lease:RUN` while it runs a run, `lease:EVAL` while it scores an evaluation (30 s TTL,
renewed every 5 s; see services/trainer_worker/lease.py). Each pass looks at the granted, dispatched run claims: when the
run is STARTING or RUNNING and its lease has been absent for longer than `worker_lost_after_s`
(measured from the later of `dispatchedAt` and the last time a pass saw the lease, `leaseSeenAt`
on the claim, so a task still waiting to be picked up is not declared lost too fast), the run goes
back to QUEUED under a new claim with the old claim's `seq`, and its `attempts` grows by one. A run
whose cancel was requested is CANCELLED instead.

Sooner, when the run's **node** stopped answering (its worker's heartbeat `node:NODE:alive` gone,
dead_nodes.py): the first pass that sees the heartbeat missing says so on the run (warn event `node
NODE stopped answering ...`), and once it has been missing for `nodeDeadAfterS` the run goes back
at once, whatever its lease says: a lease that names that node is deleted (only if still the one
seen) and `give_back` takes a new fencing number, so the old holder, should it still run somewhere
cut off, can write nothing more (the fence, not the lease, is what keeps it out). A lease held by a
process of another node is left to the time rule above.

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

from services.scheduler.dead_nodes import lease_node, track_absences
from shared import reasons
from shared.claims.orphans import LEASED_KINDS, give_back, in_workers_hands
from shared.claims.queue import ClaimQueue
from shared.config.deployment import DeploymentConfig
from shared.store.documents import Store
from shared.store.times import epoch, iso

# `leaseSeenAt` is written at most this often per claim, so a pass does not rewrite every claim.
LEASE_SEEN_WRITE_S = 10.0

# Delete a lease only if it is still the one seen.
_DROP_LEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


def requeue_lost(
    *, queue: ClaimQueue, store: Store, config: DeploymentConfig, now: float | None = None, log: Any = None
) -> list[dict[str, Any]]:
    """Re-queue (or cancel) the runs and evaluations whose worker was lost. Returns the claims given up."""
    log = log or structlog.get_logger()
    now = time.time() if now is None else now
    lost = []
    held = {pool: [c for c in queue.held(pool) if c["kind"] in LEASED_KINDS and c.get("dispatchedAt")]
            for pool in config.pools}
    absences = _worker_absences(store, [c for claims in held.values() for c in claims], now)
    for claims in held.values():
        if not claims:
            continue
        pipe = store.redis.pipeline(transaction=False)
        for claim in claims:
            pipe.get(store.keys.lease(claim["resource"]))
        pipe.mget([store.keys.resource(c["resource"]) for c in claims])
        *leases, raws = pipe.execute()
        for claim, token, raw in zip(claims, leases, raws):
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
            node = claim["node"]
            if node in absences.new:
                store.add_event(claim["resource"], reasons.node_not_answering(
                    node, kind=claim["kind"], after_s=config.node_dead_after_s), level="warn")
            if absences.dead(node, now=now, after_s=config.node_dead_after_s) and lease_node(token) in (None, node):
                if token is not None:
                    store.redis.eval(_DROP_LEASE, 1, store.keys.lease(claim["resource"]), token)
                if give_back(queue, store, claim, requeued_event=reasons.node_dead_requeued(node),
                             cancelled_detail=reasons.node_dead_cancelled(node), log=log):
                    lost.append(claim)
                continue
            if token is not None:
                if now - (epoch(claim.get("leaseSeenAt")) or 0.0) >= LEASE_SEEN_WRITE_S:
                    queue.touch_lease(claim["id"], iso(now))
                continue
            since = max(epoch(claim["dispatchedAt"]) or 0.0, epoch(claim.get("leaseSeenAt")) or 0.0)
            if now - since > config.worker_lost_after_s and give_back(
                    queue, store, claim, requeued_event=reasons.worker_lost_requeued(claim["node"]),
                    cancelled_detail=reasons.worker_lost_cancelled(claim["node"]), log=log):
                lost.append(claim)
    return lost


def _worker_absences(store: Store, claims: list[dict[str, Any]], now: float):
    """Since when each node holding `claims` has had no worker heartbeat (dead_nodes.py). A node
    whose worker was asked to stop (`node:NODE:stopping`) counts as present while that key lasts:
    its worker gives its runs back itself, each with its last snapshot (trainer_worker/stopping.py),
    and re-queuing them here first would fence that snapshot out."""
    nodes = sorted({c["node"] for c in claims if c.get("node")})
    pipe = store.redis.pipeline(transaction=False)
    for node in nodes:
        pipe.exists(store.keys.node_alive(node), store.keys.node_stopping(node))
    present = dict(zip(nodes, (bool(up) for up in pipe.execute())))
    return track_absences(store.redis, store.keys.workers_missing(), present, now=now)
