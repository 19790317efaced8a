"""The claim queues in Redis (SPEC 5): submit, release, and the grant pass.

A claim is a JSON document under `claim:ID`. Waiting claim ids sit in the pool's sorted set
`pool:POOL:queue` scored by `seq` (queue order); granted ones in the set `pool:POOL:held`.
`claim-of:RESOURCE` names a resource's live claim, so a resource never holds two at once.
Every change that moves a claim between those keys happens in one MULTI, under WATCH of the keys
it read, so schedulers and APIs running side by side never grant one device twice.
"""

from __future__ import annotations

import json
from typing import Any

import redis

from shared import reasons
from shared.config import DeploymentConfig
from shared.errors import Conflict, Unprocessable, ValidationFailed
from shared.ids import Kind, new_id
from shared.keys import Keys
from shared.states import ClaimState
from shared.store import now_iso

from services.scheduler.grants import ClaimView, plan_grants

CLAIM_KINDS = ("run", "evaluation", "endpoint")
# A released claim is kept this long so a resource's `scheduling.claim` can still be looked up.
RELEASED_CLAIM_TTL_S = 7 * 24 * 3600


def device_index(device: str) -> int:
    """`cpu:3` -> 3."""
    return int(device.rpartition(":")[2])


def claim_view(claim: dict[str, Any]) -> ClaimView:
    return ClaimView(
        id=claim["id"],
        gpus=int(claim["gpus"]),
        workload=claim["workload"],
        node=claim.get("node"),
        device_indices=tuple(device_index(d) for d in claim.get("devices") or ()),
    )


class ClaimQueue:
    """Claims of every pool of one deployment (one key prefix).

    With a `config`, `submit` refuses claims that could never be granted (SPEC 5).
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
    ) -> dict[str, Any]:
        """Queue a new claim at the back of its pool (or at `seq`, for a re-queued claim)."""
        self._check(kind=kind, pool=pool, gpus=gpus, workload=workload)
        if seq is None:
            seq = int(self.redis.incr(self.keys.claim_seq()))
        claim = {
            "id": new_id(Kind.CLAIM), "kind": kind, "resource": resource_id, "pool": pool,
            "gpus": gpus, "workload": workload, "seq": seq, "state": ClaimState.WAITING.value,
            "node": None, "devices": [], "submittedAt": now_iso(), "grantedAt": None,
            "dispatchedAt": None, "releasedAt": None, "model": model,
        }
        owner_key = self.keys.claim_of(resource_id)
        with self.redis.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(owner_key)
                    live_id = pipe.get(owner_key)
                    live = self._docs(pipe, [live_id])[0] if live_id else None
                    if live and live["state"] != ClaimState.RELEASED:
                        pipe.unwatch()
                        raise Conflict(
                            f"{kind} {resource_id} already has claim {live['id']} ({live['state']})",
                            details={"claim": live["id"]},
                        )
                    pipe.multi()
                    pipe.set(self.keys.claim(claim["id"]), json.dumps(claim))
                    pipe.zadd(self.keys.pool_queue(pool), {claim["id"]: seq})
                    pipe.set(owner_key, claim["id"])
                    self._wake(pipe)
                    pipe.execute()
                    return claim
                except redis.WatchError:
                    continue

    def release(self, claim_id: str) -> dict[str, Any] | None:
        """Give the claim's devices back (or leave the queue). Idempotent; None if unknown."""
        key = self.keys.claim(claim_id)
        with self.redis.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(key)
                    claim = self._docs(pipe, [claim_id])[0]
                    if claim is None or claim["state"] == ClaimState.RELEASED:
                        pipe.unwatch()
                        return claim
                    owner_key = self.keys.claim_of(claim["resource"])
                    pipe.watch(owner_key)
                    owned = pipe.get(owner_key) == claim_id
                    claim = {**claim, "state": ClaimState.RELEASED.value, "releasedAt": now_iso()}
                    pipe.multi()
                    pipe.zrem(self.keys.pool_queue(claim["pool"]), claim_id)
                    pipe.srem(self.keys.pool_held(claim["pool"]), claim_id)
                    pipe.set(key, json.dumps(claim), ex=RELEASED_CLAIM_TTL_S)
                    if owned:
                        pipe.delete(owner_key)
                    self._wake(pipe)
                    pipe.execute()
                    return claim
                except redis.WatchError:
                    continue

    def requeue(self, claim_id: str) -> dict[str, Any] | None:
        """Release the claim and queue a new one for the same resource at the same place (seq).

        For work whose worker was lost: it waits again without losing its turn (SPEC 2.3).
        """
        old = self.release(claim_id)
        if old is None:
            return None
        return self.submit(
            kind=old["kind"], resource_id=old["resource"], pool=old["pool"], gpus=old["gpus"],
            workload=old["workload"], model=old.get("model"), seq=old["seq"],
        )

    def mark_dispatched(self, claim_id: str) -> dict[str, Any] | None:
        """Stamp `dispatchedAt` on a granted claim (once). Returns the claim as stored."""
        key = self.keys.claim(claim_id)
        with self.redis.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(key)
                    claim = self._docs(pipe, [claim_id])[0]
                    if claim is None or claim["state"] != ClaimState.GRANTED or claim["dispatchedAt"]:
                        pipe.unwatch()
                        return claim
                    claim = {**claim, "dispatchedAt": now_iso()}
                    pipe.multi()
                    pipe.set(key, json.dumps(claim))
                    pipe.execute()
                    return claim
                except redis.WatchError:
                    continue

    def grant_pass(self, config: DeploymentConfig, pool_name: str) -> list[dict[str, Any]]:
        """Grant what fits now in one pool (rules in grants.py). Returns the granted claims.

        Reads the queue and the held set under WATCH and writes every grant in one MULTI; when
        anything else touched them meanwhile (a submit, a release, another scheduler's pass) the
        pass starts over from a fresh read.
        """
        pool = config.pool(pool_name)
        if pool is None:
            raise ValidationFailed(f"pool {pool_name} is not declared")
        nodes = {n.name: n for n in pool.nodes}
        queue_key, held_key = self.keys.pool_queue(pool_name), self.keys.pool_held(pool_name)
        with self.redis.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(queue_key, held_key)
                    waiting, stale_waiting = self._split(pipe, pipe.zrange(queue_key, 0, -1), ClaimState.WAITING)
                    held, stale_held = self._split(pipe, pipe.smembers(held_key), ClaimState.GRANTED)
                    grants = plan_grants(
                        {name: n.device_count for name, n in nodes.items()},
                        [claim_view(c) for c in held],
                        [claim_view(c) for c in waiting],
                        pool.quotas,
                    )
                    if not (grants or stale_waiting or stale_held):
                        pipe.unwatch()
                        return []
                    by_id, stamp = {c["id"]: c for c in waiting}, now_iso()
                    granted = [
                        {
                            **by_id[g.claim_id], "state": ClaimState.GRANTED.value, "node": g.node,
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
                    if stale_waiting:  # ids whose document is gone or in another state
                        pipe.zrem(queue_key, *stale_waiting)
                    if stale_held:
                        pipe.srem(held_key, *stale_held)
                    pipe.execute()
                    return granted
                except redis.WatchError:
                    continue

    # --- helpers
    def _check(self, *, kind: str, pool: str, gpus: int, workload: str) -> None:
        if kind not in CLAIM_KINDS:
            raise ValueError(f"claim kind must be one of {', '.join(CLAIM_KINDS)}, not {kind!r}")
        if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
            raise ValidationFailed(
                "execution.gpus must be a whole number of at least 1", details={"field": "execution.gpus"}
            )
        if self.config is None:
            return
        spec = self.config.pool(pool)
        if spec is None:
            raise ValidationFailed(
                f"execution.pool names pool {pool}, which is not declared", details={"field": "execution.pool"}
            )
        largest = spec.largest_node_gpus
        if gpus > largest:
            raise Unprocessable(reasons.gpus_exceed_every_node(gpus=gpus, pool=pool, largest_node_gpus=largest))
        quota = spec.quotas.get(workload)
        if quota is not None and gpus > quota:
            raise Unprocessable(
                reasons.gpus_exceed_quota(gpus=gpus, workload=workload, pool=pool, quota_gpus=quota)
            )

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

