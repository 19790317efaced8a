"""A run is trained in one place only: a lease in Redis with a fencing number.

The worker that takes a run sets `lease:RUN` to its own token only if no one holds it, renews it
from a heartbeat thread, and takes a fresh fencing number (INCR `fence:RUN`). It writes the number
onto the run; every later write by that worker checks that the run still carries its number, so a
worker that lost its lease (paused too long, partitioned) can no longer change the run.

Over a Redis outage (the worker's client retries, shared/store/redis_retry.py) the lease may lapse: a
renewal that finds it gone takes it again, but only while `fence:RUN` is still this worker's
number, that is, while nobody else has taken the run (or re-queued it) meanwhile.
"""

from __future__ import annotations

import secrets
import threading

import redis

from shared.lifecycle.core import Lifecycle, StaleWriter, fenced
from shared.store import leases
from shared.store.keys import Keys

LEASE_TTL_MS = 30_000
RENEW_EVERY_S = 5.0

class LeaseLost(Exception):
    """This worker no longer holds the run's lease; it must stop touching the run."""


class Lease:
    def __init__(self, client: redis.Redis, keys: Keys, resource_id: str, holder: str):
        self.redis = client
        self.resource_id = resource_id
        self.key = keys.lease(resource_id)
        self.fence_key = keys.fence(resource_id)
        self.token = f"{holder}:{secrets.token_hex(6)}"
        self.fence: int | None = None
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self) -> bool:
        if not leases.take(self.redis, self.key, self.token, LEASE_TTL_MS):
            return False
        self.fence = int(self.redis.incr(self.fence_key))
        self._thread = threading.Thread(target=self._heartbeat, name=f"lease-{self.key}", daemon=True)
        self._thread.start()
        return True

    def _heartbeat(self) -> None:
        while not self._stop.wait(RENEW_EVERY_S):
            try:
                if not leases.renew_fenced(self.redis, self.key, self.token, LEASE_TTL_MS,
                                           fence_key=self.fence_key, fence=self.fence):
                    self.lost.set()
                    return
            except redis.RedisError:
                continue  # out of reach past the client's retries: the TTL or a re-take covers the next try

    def release(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=2)
        try:
            leases.release(self.redis, self.key, self.token)
        except redis.RedisError:
            pass  # it expires on its own


def fenced_update(store, lease: Lease, kind: str, change):
    """`store.update` of the leased resource that writes only while this worker still holds it: a
    lost lease, or a document stamped with a newer fence, raises LeaseLost and writes nothing."""
    _check(lease, kind)
    try:
        return store.update(lease.resource_id, fenced(change, fence=lease.fence, what=f"{kind} {lease.resource_id}"))
    except StaleWriter as exc:
        raise LeaseLost(str(exc)) from None


def fenced_move(store, lease: Lease, lifecycle: Lifecycle, target, **kwargs):
    """The resource's status moved by its lifecycle (shared/lifecycle), fenced like `fenced_update`."""
    _check(lease, lifecycle.kind)
    try:
        return lifecycle.move(store, lease.resource_id, target, fence=lease.fence, **kwargs)
    except StaleWriter as exc:
        raise LeaseLost(str(exc)) from None


def _check(lease: Lease, kind: str) -> None:
    if lease.lost.is_set():
        raise LeaseLost(f"lease of {kind} {lease.resource_id} expired")
