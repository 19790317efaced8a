"""The cap on the claims one workload may have queued (scheduling.maxQueuedPerWorkload): runs,
evaluations and endpoints waiting for GPUs, all kinds and pools together.

`workload:W:queued` (a sorted set, scored by when each id was added) holds the ids of the
workload's WAITING claims and of places reserved for claims about to be submitted. The API
reserves places before it stores anything (`reserve`: a 429 past the cap, nothing written), then
submits each claim under a reserved id; ClaimQueue keeps the set in step as claims are submitted,
granted, released and re-queued, in the same MULTI as the queues themselves.

The set's size is what the cap counts, so it must never count too much and refuse work silently:
when a reservation would pass the cap, its members are checked against their claims first, and an
id whose claim is no longer WAITING, or a reservation never submitted within RESERVATION_TTL_S
(its request failed half-way), is dropped before counting again.
"""

from __future__ import annotations

import json
import time
from typing import Any

import redis

from shared import reasons
from shared.errors import TooManyQueued
from shared.lifecycle.states import ClaimState
from shared.store.ids import Kind, new_id
from shared.store.keys import Keys
from shared.store.transactions import transact

# A reserved place whose claim was never submitted is given back after this long: far longer than
# a request takes from its reservation to its submission, short enough that a failed one is not felt.
RESERVATION_TTL_S = 60.0


def reserve(client: redis.Redis, keys: Keys, *, workload: str, cap: int, count: int = 1) -> list[str]:
    """Reserve `count` places in the workload's queue: the claim ids to submit under. Refused with
    TooManyQueued when the workload's queued claims and reservations would pass `cap`."""
    key = keys.workload_queued(workload)
    wanted = [new_id(Kind.CLAIM) for _ in range(count)]

    def write(pipe) -> list[str] | None:
        queued = int(pipe.zcard(key))
        if queued + count > cap:
            if pruned:
                raise TooManyQueued(reasons.queued_claims_cap(workload=workload, cap=cap, queued=queued, asked=count),
                                    details={"workload": workload, "queued": queued, "maxQueued": cap})
            return None
        pipe.multi()
        pipe.zadd(key, {claim_id: time.time() for claim_id in wanted})
        return wanted

    pruned = False
    while (reserved := transact(client, write, key)) is None:
        prune(client, keys, workload)
        pruned = True
    return reserved


def give_back(client: redis.Redis, keys: Keys, *, workload: str, claim_ids: list[str]) -> None:
    """Give back reserved places whose claims were not submitted (the request failed after
    reserving them); a place whose claim exists is the claim's, and stays."""
    if not claim_ids:
        return
    raws = client.mget([keys.claim(i) for i in claim_ids])
    unused = [claim_id for claim_id, raw in zip(claim_ids, raws) if raw is None]
    if unused:
        client.zrem(keys.workload_queued(workload), *unused)


def prune(client: redis.Redis, keys: Keys, workload: str, *, now: float | None = None) -> list[str]:
    """Drop from the workload's set what no longer counts: ids whose claim is not WAITING, and
    reservations older than RESERVATION_TTL_S whose claim was never submitted. Returns them."""
    now = time.time() if now is None else now
    key = keys.workload_queued(workload)
    members = client.zrange(key, 0, -1, withscores=True)
    if not members:
        return []
    raws = client.mget([keys.claim(claim_id) for claim_id, _ in members])
    stale = [claim_id for (claim_id, added), raw in zip(members, raws) if not _counts(raw, added, now)]
    if stale:
        client.zrem(key, *stale)
    return stale


def _counts(raw: Any, added: float, now: float) -> bool:
    if raw is None:  # reserved, not submitted yet; or its request failed before it was
        return now - added < RESERVATION_TTL_S
    return json.loads(raw).get("state") == ClaimState.WAITING
