"""A task that finds the process before it gone (issue 26; docs/faults.md, "Worker and training").

Celery delivers a task again when the pool process running it died under a live worker: killed
from outside, typically by the kernel's out-of-memory killer, which picks the process that trains.
The worker's main process notices at once, and with `task_reject_on_worker_lost` puts the message
back within `worker_lost_wait` (shared/messaging/celery_app.py); a copy of a task also comes back when a worker
stopped and its message had not been acknowledged. The copy finds its run (or evaluation) STARTING
or RUNNING under its claim, and its lease:

- **held by a live process** (renewed while watched, `reclaim.lease_holder_gone`): skipped, as
  before. Nothing ever trains in two places.
- **held by a process provably gone** (this machine's and no longer running: at once; any other
  holder: not renewed for `reclaim.LEASE_SILENT_S`), or **absent while the run is RUNNING** (its
  holder went away and the lease expired): the work was in a process that died. The task drops
  that lease, takes it, and gives the work back at once through `shared.claims.orphans.give_back`,
  the one way back to the queue (QUEUED keeping its place, attempts + 1, a new fence), with the
  warn event `reasons.process_lost_requeued`. The scheduler grants it again (on this node, whose
  worker is alive, within a pass) and the run resumes from its latest snapshot.
- **lost MAX_LOST_PROCESSES times in a row** (a run: with no new snapshot between the losses, the
  count starts over at each snapshot; an evaluation keeps nothing half-done, so every loss counts):
  FAILED with `reasons.process_lost_failed` instead, since a process that the out-of-memory killer
  picks every time would otherwise be started again for ever.

Before, the copy found the lease held and was skipped: the run stayed RUNNING, unattended, until the
scheduler's lost-worker pass (the lease's 30 s TTL + `workerLostAfterS`, 60 s). A copy that came once
the lease had expired trained the run and failed it: `a run cannot go from RUNNING to RUNNING`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from services.trainer_worker.lease import Lease, LeaseLost, fenced_move
from services.trainer_worker.reclaim import lease_holder_gone
from shared import reasons
from shared.claims.orphans import LEASED_KINDS, give_back, in_workers_hands
from shared.errors import NotFound
from shared.store import leases

# A run or evaluation whose process dies this many times in a row fails (see the module).
MAX_LOST_PROCESSES = 3
# The count, on the run's or evaluation's document; a run's next snapshot removes it.
LOST_FIELD = "lostProcesses"



class Taken(StrEnum):
    FRESH = "fresh"  # the lease was free and the work not yet under way: do it
    FROM_LOST = "from a lost process"  # the work's previous process is gone: give it back
    HELD = "held"  # a live process holds it: skip


def take(worker: Any, claim: dict[str, Any], doc: dict[str, Any], lease: Lease, log: Any) -> Taken:
    """Take the lease of the claim's work, telling fresh work from work whose process died."""
    for _ in range(2):  # a lease that its holder let go while we looked: try once more
        if lease.acquire():
            running = doc.get(LEASED_KINDS[claim["kind"]][0].field) == "RUNNING"
            return Taken.FROM_LOST if running and in_workers_hands(claim, doc) else Taken.FRESH
        token = worker.redis.get(worker.keys.lease(doc["id"]))
        if token is None:
            continue
        if not in_workers_hands(claim, doc) or not lease_holder_gone(worker.store, claim, token, log):
            return Taken.HELD
        leases.release(worker.redis, worker.keys.lease(doc["id"]), token)
        log.warning("the process that held this work is gone; taking its lease", holder=token)
        if lease.acquire():
            return Taken.FROM_LOST
        return Taken.HELD  # another copy came first
    return Taken.HELD


def hand_back_lost(worker: Any, claim: dict[str, Any], lease: Lease, log: Any) -> str:
    """Give back (or, lost too often, fail) work whose process died; this task holds its lease."""
    kind, resource_id, node = claim["kind"], claim["resource"], worker.node
    lifecycle = LEASED_KINDS[kind][0]
    counted: dict[str, int] = {}

    def count(doc: dict[str, Any]) -> dict[str, Any] | None:
        counted.clear()  # a write retried after a concurrent one counts again
        if not in_workers_hands(claim, doc):
            return None  # someone else's change came first
        counted["lost"] = int(doc.get(LOST_FIELD) or 0) + 1
        return {**doc, "fence": lease.fence, LOST_FIELD: counted["lost"]}  # as its holder now

    try:
        doc = worker.store.update(resource_id, count)
    except NotFound:
        return "skipped: it no longer exists"
    if not counted:
        return "skipped: no longer in this claim's hands"
    lost = counted["lost"]
    log.warning("its previous process died", lost=lost, limit=MAX_LOST_PROCESSES)
    if lost >= MAX_LOST_PROCESSES and not doc.get("cancelRequested"):
        detail = reasons.process_lost_failed(kind, node, lost, since_snapshot=kind == "run")
        try:
            fenced_move(worker.store, lease, lifecycle, lifecycle.states.FAILED, detail=detail)
        except LeaseLost:
            return "stopped: lease lost"
        worker.store.add_event(resource_id, detail, level="error")
        worker.claims().release(claim["id"])
        return "failed: its process kept dying"
    outcome = give_back(worker.claims(), worker.store, claim,
                        requeued_event=reasons.process_lost_requeued(kind, node, lost, MAX_LOST_PROCESSES),
                        cancelled_detail=reasons.process_lost_cancelled(kind, node), log=log)
    return f"{outcome}: its previous process died" if outcome else "skipped: no longer in this claim's hands"
