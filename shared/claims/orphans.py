"""Work whose worker is gone (SPEC 2.3, 2.5): what counts as orphaned, and the one way it goes back
to the queue.

A dispatched run or evaluation is in a worker's hands while it is STARTING or RUNNING under its
claim (`in_workers_hands`); the worker holds `lease:ID` meanwhile (services/trainer_worker/lease.py).
It is **orphaned** when that worker is gone. Two parties find orphans, each by its own evidence, and
both hand them back through `give_back`:

- the scheduler (services/scheduler/lost.py): the lease has been absent for longer than
  `workerLostAfterS` (the worker may be anywhere, so only time tells);
- a trainer worker starting on a node (services/trainer_worker/reclaim.py): the claim is its own
  node's, no task for it waits in the node's queue, and its lease is absent or held by a process
  of the node's previous worker that is provably dead. It knows at once, because it is the node's
  only worker (its node heartbeat, services/trainer_worker/heartbeat.py).

Two more hand work back the same way: a worker asked to stop gives back what it holds
(services/trainer_worker/stopping.py), and a task delivered again that finds its work's previous
process dead gives it back (services/trainer_worker/takeover.py).

`give_back` moves the work back to QUEUED (or CANCELLED when a cancel was asked) through its
lifecycle, under a new claim that keeps the old `seq`, with one more `attempts`, and takes a new
fencing number for it: whatever the old holder still tries to write is refused as a stale writer.
"""

from __future__ import annotations

from typing import Any

from shared.claims.queue import ClaimQueue
from shared.lifecycle import evaluations, runs
from shared.lifecycle.evaluations import EVALUATIONS
from shared.lifecycle.runs import RUNS
from shared.messaging.celery_app import node_queue
from shared.store.documents import Store
from shared.store.ids import Kind, new_id

# Kinds a worker carries out under a lease: their lifecycle and the states in which a worker holds
# them. An evaluation keeps nothing half-done: re-queued, it scores every row again.
LEASED_KINDS = {"run": (RUNS, runs.ACTIVE), "evaluation": (EVALUATIONS, evaluations.ACTIVE)}


def in_workers_hands(claim: dict[str, Any], doc: dict[str, Any] | None) -> bool:
    """True when the claim's run or evaluation was dispatched and is STARTING or RUNNING under it."""
    if claim.get("kind") not in LEASED_KINDS or not claim.get("dispatchedAt") or doc is None:
        return False
    lifecycle, active = LEASED_KINDS[claim["kind"]]
    return doc.get(lifecycle.field) in active and (doc.get("scheduling") or {}).get("claim") == claim["id"]


def task_waiting(store: Store, claim: dict[str, Any]) -> bool:
    """True when the claim's task (task id = claim id) still waits in its node's broker queue: a
    worker will pick it up, so it is nobody's orphan (and needs no second dispatch)."""
    key = store.keys.celery_prefix() + node_queue(claim["node"])
    return any(claim["id"] in message for message in store.redis.lrange(key, 0, -1))


def give_back(queue: ClaimQueue, store: Store, claim: dict[str, Any], *, requeued_event: str,
              cancelled_detail: str, log: Any) -> str | None:
    """Move the orphaned run (or evaluation) of `claim` back to QUEUED, or to CANCELLED when its
    cancel was requested; then its claim. Returns "requeued", "cancelled", or None when it was no
    longer the claim's (someone else's change came first)."""
    new_claim_id = new_id(Kind.CLAIM)
    lifecycle, active = LEASED_KINDS[claim["kind"]]
    states = lifecycle.states
    # A new fencing number, so the old holder, should it still be running, can write nothing more.
    fence = int(store.redis.incr(store.keys.fence(claim["resource"])))

    def target(doc: dict[str, Any]):
        # A cancel the user asked for while the worker held it ends it; anything else waits again.
        return states.CANCELLED if doc.get("cancelRequested") else states.QUEUED

    def details(doc: dict[str, Any]) -> dict[str, Any]:
        doc["fence"] = fence
        if doc[lifecycle.field] == states.CANCELLED:
            doc["detail"] = cancelled_detail
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
        store.add_event(claim["resource"], requeued_event, level="warn")
        bound.warning(requeued_event, kind=claim["kind"], newClaim=new_claim_id)
    elif outcome == "cancelled":
        queue.release(claim["id"])
        store.add_event(claim["resource"], cancelled_detail, level="warn")
        bound.warning(cancelled_detail, kind=claim["kind"])
    return outcome
