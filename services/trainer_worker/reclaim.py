"""A worker starting on a node gives back, at once, the work its node's previous worker left
behind (issue 14; docs/faults.md, "Worker and training").

Without it, a worker killed and started again within a second leaves its runs RUNNING until the
scheduler declares their worker lost: the lease's TTL (30 s) plus `workerLostAfterS` (60 s), about
85 s. A worker that starts again on the node knows better, and sooner, once it is the node's only
worker (heartbeat.py, `NodeHeartbeat.alone`) and before it takes any task:

- its node's granted claims of runs and evaluations that were dispatched and are STARTING or RUNNING
  under that claim (shared/claims/orphans.py, `in_workers_hands`), and whose task does not wait in
  the node's queue (this worker will run those itself),
- whose lease is absent, or held by a process that is provably gone: one of this machine that no
  longer runs (`heartbeat.dead_here`), or any holder that has stopped renewing it for longer than a
  live one ever waits (LEASE_SILENT_S; watched for at most that long),

are **orphans**: each lease is deleted (only if still the one seen) and the work goes back to the
queue through `shared.claims.orphans.give_back`, with the warn event
`worker restarted on node NODE; re-queued keeping its place`. The scheduler grants it again (this
node is alive), and the run resumes from its latest snapshot with training state.

A lease that is renewed while watched belongs to a live process (an orphaned child of the old
worker that still trains, say): that claim is left alone, and its holder finishes it.
"""

from __future__ import annotations

import time
from typing import Any

from services.trainer_worker.heartbeat import dead_here
from services.trainer_worker.lease import LEASE_TTL_MS, RENEW_EVERY_S
from shared import reasons
from shared.claims.orphans import (
    LEASED_KINDS,
    give_back,
    in_workers_hands,
    task_waiting,
)
from shared.claims.queue import ClaimQueue
from shared.store.documents import Store

# A live holder renews its lease every RENEW_EVERY_S; one silent for longer than twice that (and a
# margin for a busy process) is dead.
LEASE_SILENT_S = 2 * RENEW_EVERY_S + 2.0
WATCH_POLL_S = 0.25
RENEWED_MS = 50  # a lease's time left only shrinks, unless its holder renews it

# Delete a lease only if it is still the one seen.
_DROP = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


def holder_of(token: str) -> tuple[str | None, str | None, int | None]:
    """(node, host, pid) of a lease token `NODE/HOST/PID:HEX` (lease.Lease), Nones when not one."""
    holder = token.rsplit(":", 1)[0]
    parts = holder.split("/")
    if len(parts) != 3:
        return None, None, None
    node, host, pid = parts
    return node, host, int(pid) if pid.isdigit() else None


def reclaim_orphans(*, queue: ClaimQueue, store: Store, config: Any, node: str, log: Any,
                    silent_s: float = LEASE_SILENT_S) -> list[dict[str, Any]]:
    """Give back the orphaned runs and evaluations of `node` (see the module). Call it only as the
    node's only worker, before taking tasks. Returns the claims given back."""
    pool = config.pool_of_node(node)
    if pool is None:
        return []
    claims = [c for c in queue.held(pool.name) if c.get("node") == node and c["kind"] in LEASED_KINDS]
    docs = store.get_many_or_none([c["resource"] for c in claims])
    candidates = [c for c, doc in zip(claims, docs) if in_workers_hands(c, doc) and not task_waiting(store, c)]
    orphans: list[tuple[dict[str, Any], str | None]] = []
    watched: dict[str, tuple[dict[str, Any], str]] = {}
    for claim in candidates:
        token = store.redis.get(store.keys.lease(claim["resource"]))
        if token is None:
            orphans.append((claim, None))
            continue
        lease_node, host, pid = holder_of(token)
        if lease_node == node and dead_here(host, pid):
            orphans.append((claim, token))
        else:
            watched[claim["id"]] = (claim, token)
    orphans += _silent(store, watched, silent_s, log)

    given = []
    for claim, token in orphans:
        if token is not None:
            store.redis.eval(_DROP, 1, store.keys.lease(claim["resource"]), token)
        outcome = give_back(queue, store, claim, requeued_event=reasons.worker_restarted_requeued(node),
                            cancelled_detail=reasons.worker_restarted_cancelled(node), log=log)
        if outcome:
            given.append(claim)
    return given


def lease_holder_gone(store: Store, claim: dict[str, Any], token: str, log: Any,
                      silent_s: float = LEASE_SILENT_S) -> bool:
    """True when the holder of the claim's lease, `token`, is provably gone: a process of this
    machine that no longer runs (at once), or any holder that lets the lease go or leaves it
    unrenewed for `silent_s` (watched for at most that long; a renewal proves it alive). For a task
    delivered again (takeover.py)."""
    _, host, pid = holder_of(token)
    if dead_here(host, pid):
        return True
    return bool(_silent(store, {claim["id"]: (claim, token)}, silent_s, log))


def _silent(store: Store, watched: dict[str, tuple[dict[str, Any], str]], silent_s: float,
            log: Any) -> list[tuple[dict[str, Any], str | None]]:
    """The watched leases whose holder lets them go or leaves them unrenewed for `silent_s`; those
    renewed (their time left goes up) or taken by another holder meanwhile are live: left out."""
    found = []
    last_left_ms: dict[str, int] = {}
    deadline = time.monotonic() + silent_s + 2 * WATCH_POLL_S
    while watched:
        for claim_id, (claim, token) in list(watched.items()):
            pipe = store.redis.pipeline(transaction=True)
            pipe.get(store.keys.lease(claim["resource"]))
            pipe.pttl(store.keys.lease(claim["resource"]))
            now_token, left_ms = pipe.execute()
            if now_token is None:  # expired, or let go
                found.append((claim, None))
            elif now_token != token or left_ms > last_left_ms.get(claim_id, left_ms) + RENEWED_MS:
                log.info("a live process holds this claim's lease; leaving it to it", claim=claim_id,
                         **{claim["kind"]: claim["resource"]})
            elif left_ms <= LEASE_TTL_MS - silent_s * 1000:
                found.append((claim, token))
            else:
                last_left_ms[claim_id] = left_ms
                continue
            del watched[claim_id]
        if not watched or time.monotonic() >= deadline:
            break
        time.sleep(WATCH_POLL_S)
    return found
