"""The claim queues in Redis (SPEC 5): submit, release, and the grant pass.

A claim is a JSON document under `claim:ID`. Waiting claim ids sit in the pool's sorted set
`pool:POOL:queue` scored by `seq` (queue order); granted ones in the set `pool:POOL:held`.
`claim-of:RESOURCE` names a resource's live claim, so a resource never holds two at once.
`workload:W:queued` holds a workload's waiting claims for the cap on them (queued.py).
Every change that moves a claim between those keys happens in one MULTI, under WATCH of the keys
it read, so schedulers and APIs running side by side never grant one device twice.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import redis

from shared import reasons
from shared.claims import fits, queued
from shared.claims.grants import ClaimView, claim_view, device_index, free_devices, plan_grants
from shared.claims.nodes import pool_node_states
from shared.config.deployment import DeploymentConfig
from shared.errors import Conflict, ValidationFailed
from shared.lifecycle.states import ClaimState
from shared.store.ids import Kind, new_id
from shared.store.keys import Keys
from shared.store.times import now_iso
from shared.store.transactions import transact

__all__ = ["ClaimQueue", "claim_view", "device_index", "CLAIM_KINDS"]

CLAIM_KINDS = ("run", "evaluation", "endpoint")
# A released claim is kept this long so a resource's `scheduling.claim` can still be looked up.
RELEASED_CLAIM_TTL_S = 7 * 24 * 3600


# The grant pass reads the queue this many claims at a time, and stops reading where the pass
# stops (the first claim that holds the rest back): a long queue behind a blocked head costs nothing.
READ_CHUNK = 8


class ClaimQueue:
    """Claims of every pool of one deployment (one key prefix).

    With a `config`, `submit` refuses claims that could never be granted (SPEC 5), and claims past
    the workload's cap on queued claims unless submitted under a place `reserve` gave.
    """

    def __init__(self, client: redis.Redis, keys: Keys, *, config: DeploymentConfig | None = None):
        self.redis = client
        self.keys = keys
        self.config = config

    # --- reads
    def get(self, claim_id: str) -> dict[str, Any] | None:
        raw = self.redis.get(self.keys.claim(claim_id))
        return json.loads(raw) if raw else None

    def current(self, resource_id: str) -> dict[str, Any] | None:
        """The resource's live (WAITING or GRANTED) claim, or None."""
        claim_id = self.redis.get(self.keys.claim_of(resource_id))
        return self.get(claim_id) if claim_id else None

    def waiting(self, pool: str) -> list[dict[str, Any]]:
        """Waiting claims of the pool, in queue order."""
        claims = self._docs(self.redis, self.redis.zrange(self.keys.pool_queue(pool), 0, -1))
        return [c for c in claims if c is not None]

    def held(self, pool: str) -> list[dict[str, Any]]:
        """Granted claims of the pool, in queue order."""
        claims = self._docs(self.redis, self.redis.smembers(self.keys.pool_held(pool)))
        return sorted((c for c in claims if c is not None), key=lambda c: (c["seq"], c["id"]))

    # --- writes
    def submit(
        self,
        *,
        kind: str,
        resource_id: str,
        pool: str,
        gpus: int,
        workload: str,
        model: str | None = None,
        seq: int | None = None,
        claim_id: str | None = None,
    ) -> dict[str, Any]:
        """Queue a new claim at the back of its pool (or at `seq`, for a re-queued claim), under
        `claim_id` when given (a place `reserve` gave)."""
        self.check(kind=kind, pool=pool, gpus=gpus, workload=workload)
        if claim_id is None and self.config is not None:
            claim_id = self.reserve(workload=workload)[0]
        try:
            return self._submit(kind=kind, resource_id=resource_id, pool=pool, gpus=gpus, workload=workload,
                                model=model, seq=seq, claim_id=claim_id)
        except BaseException:
            if claim_id is not None:  # a place reserved for it is given back
                queued.give_back(self.redis, self.keys, workload=workload, claim_ids=[claim_id])
            raise

    def reserve(self, *, workload: str, count: int = 1) -> list[str]:
        """`count` places in the workload's queue (claim ids to submit under), or TooManyQueued
        (429) when its queued claims would pass the deployment's cap (queued.py)."""
        cap = self.config.max_queued_per_workload if self.config is not None else None
        if cap is None:
            return [new_id(Kind.CLAIM) for _ in range(count)]
        return queued.reserve(self.redis, self.keys, workload=workload, cap=cap, count=count)

    def give_back(self, *, workload: str, claim_ids: list[str]) -> None:
        """Give back reserved places whose claims were never submitted."""
        queued.give_back(self.redis, self.keys, workload=workload, claim_ids=claim_ids)

    def _submit(self, *, kind: str, resource_id: str, pool: str, gpus: int, workload: str, model: str | None,
                seq: int | None, claim_id: str | None) -> dict[str, Any]:
        if seq is None:
            seq = int(self.redis.incr(self.keys.claim_seq()))
        claim = {
            "id": claim_id or new_id(Kind.CLAIM), "kind": kind, "resource": resource_id, "pool": pool,
            "gpus": gpus, "workload": workload, "seq": seq, "state": ClaimState.WAITING.value,
            "node": None, "devices": [], "submittedAt": now_iso(), "grantedAt": None,
            "dispatchedAt": None, "releasedAt": None, "model": model,
        }
        owner_key = self.keys.claim_of(resource_id)

        def write(pipe: Any) -> dict[str, Any]:
            live_id = pipe.get(owner_key)
            live = self._docs(pipe, [live_id])[0] if live_id else None
            if live and live["state"] != ClaimState.RELEASED:
                raise Conflict(
                    reasons.claim_exists(kind, resource_id, live["id"], live["state"]),
                    details={"claim": live["id"]},
                )
            pipe.multi()
            pipe.set(self.keys.claim(claim["id"]), json.dumps(claim))
            pipe.zadd(self.keys.pool_queue(pool), {claim["id"]: seq})
            pipe.set(owner_key, claim["id"])
            pipe.zadd(self.keys.workload_queued(workload), {claim["id"]: time.time()})
            self._wake(pipe)
            return claim

        return transact(self.redis, write, owner_key)

    def release(self, claim_id: str) -> dict[str, Any] | None:
        """Give the claim's devices back (or leave the queue). Idempotent; None if unknown."""
        key = self.keys.claim(claim_id)

        def write(pipe: Any) -> dict[str, Any] | None:
            claim = self._docs(pipe, [claim_id])[0]
            if claim is None or claim["state"] == ClaimState.RELEASED:
                return claim
            owner_key = self.keys.claim_of(claim["resource"])
            pipe.watch(owner_key)
            owned = pipe.get(owner_key) == claim_id
            claim = {**claim, "state": ClaimState.RELEASED.value, "releasedAt": now_iso()}
            pipe.multi()
            pipe.zrem(self.keys.pool_queue(claim["pool"]), claim_id)
            pipe.srem(self.keys.pool_held(claim["pool"]), claim_id)
            pipe.zrem(self.keys.workload_queued(claim.get("workload", "")), claim_id)
            pipe.set(key, json.dumps(claim), ex=RELEASED_CLAIM_TTL_S)
            if owned:
                pipe.delete(owner_key)
            self._wake(pipe)
            return claim

        return transact(self.redis, write, key)

    def requeue(self, claim_id: str, *, new_claim_id: str | None = None) -> dict[str, Any] | None:
        """Release the claim and queue a new one for the same resource at the same place (seq), in
        one transaction. For work whose worker was lost: it waits again without losing its turn.

        Idempotent: when the claim was already released, the resource's live claim is returned if
        it is `new_claim_id` (a re-queue that already happened), else None.
        """
        key = self.keys.claim(claim_id)

        def write(pipe: Any) -> dict[str, Any] | None:
            old = self._docs(pipe, [claim_id])[0]
            if old is None:
                return None
            owner_key = self.keys.claim_of(old["resource"])
            pipe.watch(owner_key)
            live_id = pipe.get(owner_key)
            if old["state"] == ClaimState.RELEASED:
                live = self.get(live_id) if live_id else None
                return live if live and new_claim_id and live["id"] == new_claim_id else None
            stamp = now_iso()
            new = {
                **old, "id": new_claim_id or new_id(Kind.CLAIM), "state": ClaimState.WAITING.value,
                "node": None, "devices": [], "submittedAt": stamp, "grantedAt": None,
                "dispatchedAt": None, "releasedAt": None, "leaseSeenAt": None,
            }
            released = {**old, "state": ClaimState.RELEASED.value, "releasedAt": stamp}
            pipe.multi()
            pipe.zrem(self.keys.pool_queue(old["pool"]), claim_id)
            pipe.srem(self.keys.pool_held(old["pool"]), claim_id)
            pipe.set(key, json.dumps(released), ex=RELEASED_CLAIM_TTL_S)
            pipe.set(self.keys.claim(new["id"]), json.dumps(new))
            pipe.zadd(self.keys.pool_queue(new["pool"]), {new["id"]: new["seq"]})
            pipe.set(owner_key, new["id"])
            # waiting again: it counts as queued (but is not refused: it was queued before)
            pipe.zrem(self.keys.workload_queued(old.get("workload", "")), claim_id)
            pipe.zadd(self.keys.workload_queued(new.get("workload", "")), {new["id"]: time.time()})
            self._wake(pipe)
            return new

        return transact(self.redis, write, key)

    def touch_lease(self, claim_id: str, stamp: str) -> None:
        """Record on a granted claim that its worker's lease was seen at `stamp`."""
        self._change_claim(claim_id, lambda claim: (
            {**claim, "leaseSeenAt": stamp} if claim["state"] == ClaimState.GRANTED else None))

    def mark_dispatched(self, claim_id: str) -> dict[str, Any] | None:
        """Stamp `dispatchedAt` on a granted claim (once). Returns the claim as stored."""
        return self._change_claim(claim_id, lambda claim: (
            {**claim, "dispatchedAt": now_iso()}
            if claim["state"] == ClaimState.GRANTED and not claim["dispatchedAt"] else None))

    def _change_claim(self, claim_id: str, change: Any) -> dict[str, Any] | None:
        """Read-modify-write one claim under WATCH, retrying on a concurrent write. `change` gets
        the stored claim and returns the new one, or None to leave it. Returns the claim as stored
        (None if unknown)."""
        key = self.keys.claim(claim_id)

        def write(pipe: Any) -> dict[str, Any] | None:
            claim = self._docs(pipe, [claim_id])[0]
            new = change(claim) if claim is not None else None
            if new is None:
                return claim
            pipe.multi()
            pipe.set(key, json.dumps(new))
            return new

        return transact(self.redis, write, key)

    def grant_pass(self, config: DeploymentConfig, pool_name: str) -> list[dict[str, Any]]:
        """Grant what fits now in one pool (rules in grants.py). Returns the granted claims.

        Reads the held set and then the queue, chunk by chunk and only as far as the pass goes,
        under WATCH of both, and writes every grant in one MULTI; when anything else touched them
        meanwhile (a submit, a release, another scheduler's pass) the pass starts over.
        """
        pool = fits.pool_named(config, pool_name)
        nodes = {n.name: n for n in pool.nodes}
        states = pool_node_states(self.redis, self.keys, pool)  # which kinds each node takes now
        counts = {name: n.devices for name, n in states.items() if n.takes}
        queue_key, held_key = self.keys.pool_queue(pool_name), self.keys.pool_held(pool_name)

        def write(pipe: Any) -> list[dict[str, Any]]:
            held, stale_held = self._split(pipe, pipe.smembers(held_key), ClaimState.GRANTED)
            held_views = [claim_view(c) for c in held]
            read: dict[str, dict[str, Any]] = {}
            stale_waiting: list[str] = []
            if any(free_devices(counts, held_views).values()):
                waiting = self._read_waiting(pipe, queue_key, read, stale_waiting)
                grants = plan_grants(states, held_views, waiting, pool.quotas)
            else:
                grants = []  # every device is held: nothing can start, the queue is not read
            if not (grants or stale_waiting or stale_held):
                return []
            stamp = now_iso()
            granted = [
                {
                    **read[g.claim_id], "state": ClaimState.GRANTED.value, "node": g.node,
                    "devices": [f"{nodes[g.node].device_kind}:{i}" for i in g.device_indices],
                    "grantedAt": stamp,
                }
                for g in grants
            ]
            pipe.multi()
            for claim in granted:
                pipe.set(self.keys.claim(claim["id"]), json.dumps(claim))
                pipe.zrem(queue_key, claim["id"])
                pipe.sadd(held_key, claim["id"])
                pipe.zrem(self.keys.workload_queued(claim.get("workload", "")), claim["id"])
            if stale_waiting:  # ids whose document is gone or in another state
                pipe.zrem(queue_key, *stale_waiting)
            if stale_held:
                pipe.srem(held_key, *stale_held)
            return granted

        return transact(self.redis, write, queue_key, held_key)

    def _read_waiting(
        self, pipe: Any, queue_key: str, read: dict[str, dict[str, Any]], stale: list[str]
    ) -> Iterator[ClaimView]:
        """The pool's waiting claims in queue order, read lazily in growing chunks; fills `read`
        (id -> document) and `stale` (ids without a WAITING document) as it goes."""
        start, size = 0, READ_CHUNK
        while True:
            ids = pipe.zrange(queue_key, start, start + size - 1)
            claims, stale_ids = self._split(pipe, ids, ClaimState.WAITING)
            stale.extend(stale_ids)
            for claim in claims:
                read[claim["id"]] = claim
                yield claim_view(claim)
            if len(ids) < size:
                return
            start, size = start + size, min(size * 4, 128 * READ_CHUNK)

    # --- helpers
    def check(self, *, kind: str, pool: str, gpus: int, workload: str) -> None:
        """A claim this queue takes: a known kind and a whole GPU count (the API's schemas refused any
        other already); with the deployment's config, one that could ever be granted (fits.py, the
        rule the API checked before storing anything, checked again as the claim is queued)."""
        if kind not in CLAIM_KINDS:  # a caller's mistake, never a user's input
            raise ValueError(f"claim kind must be one of {', '.join(CLAIM_KINDS)}, not {kind!r}")
        if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
            raise ValidationFailed(reasons.CLAIM_GPUS_NOT_WHOLE, details={"field": "execution.gpus"})
        if self.config is not None:
            fits.check_claim(self.config, kind=kind, pool=pool, gpus=gpus, workload=workload)

    def _split(self, client: Any, ids: Any, state: ClaimState) -> tuple[list[dict[str, Any]], list[str]]:
        """The claims of `ids` in `state`, and the ids that are not (stale entries)."""
        ids = list(ids)
        claims, stale = [], []
        for claim_id, claim in zip(ids, self._docs(client, ids)):
            if claim is not None and claim.get("state") == state:
                claims.append(claim)
            else:
                stale.append(claim_id)
        return claims, stale

    def _docs(self, client: Any, ids: Any) -> list[dict[str, Any] | None]:
        ids = list(ids)
        if not ids:
            return []
        return [json.loads(r) if r else None for r in client.mget([self.keys.claim(i) for i in ids])]

    def _wake(self, pipe: Any) -> None:
        # One token is enough to wake a scheduler; keep the list from growing with every submit.
        pipe.lpush(self.keys.scheduler_wakeup(), "1")
        pipe.ltrim(self.keys.scheduler_wakeup(), 0, 0)

