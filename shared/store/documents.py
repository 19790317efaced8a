"""Resources in Redis, the system of record (SPEC 1).

A resource is one JSON document under `res:ID`, listed in a per-kind sorted index scored by its
creation time. Updates read-modify-write under WATCH so two services never overwrite each other;
events and metrics are append-only lists beside the document.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from typing import Any

import redis
import redis.asyncio
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import EqualJitterBackoff
from redis.retry import Retry

from shared import reasons
from shared.errors import NotFound, ValidationFailed
from shared.store.ids import kind_of
from shared.store.keys import Keys
from shared.store.times import now_iso
from shared.store.transactions import transact


class Store:
    def __init__(self, client: redis.Redis, keys: Keys):
        self.redis = client
        self.keys = keys

    # --- documents
    def create(self, doc: dict[str, Any]) -> dict[str, Any]:
        pipe = self.redis.pipeline()
        doc = self.create_in(pipe, doc)
        pipe.execute()
        return doc

    def create_in(self, pipe: Any, doc: dict[str, Any]) -> dict[str, Any]:
        """Queue the writes that create `doc` on `pipe` (a pipeline, in MULTI when the caller makes
        them part of its own transaction: shared/store/endpoint_names.py); returns the document stamped."""
        stamp = now_iso()
        doc = {**doc, "createdAt": doc.get("createdAt", stamp), "updatedAt": stamp}
        kind = kind_of(doc["id"])
        pipe.set(self.keys.resource(doc["id"]), json.dumps(doc))
        pipe.zadd(self.keys.index(kind.value), {doc["id"]: time.time()})
        return doc

    def get(self, resource_id: str) -> dict[str, Any] | None:
        raw = self.redis.get(self.keys.resource(resource_id))
        return json.loads(raw) if raw else None

    def require(self, resource_id: str, what: str = "resource") -> dict[str, Any]:
        doc = self.get(resource_id)
        if doc is None:
            raise NotFound(reasons.resource_unknown(what, resource_id), details={"id": resource_id})
        return doc

    def get_many(self, ids: Iterable[str]) -> list[dict[str, Any]]:
        ids = list(ids)
        if not ids:
            return []
        raws = self.redis.mget([self.keys.resource(i) for i in ids])
        return [json.loads(r) for r in raws if r]

    def get_many_or_none(self, ids: Iterable[str]) -> list[dict[str, Any] | None]:
        """The documents of `ids`, in order, None where one is gone."""
        ids = list(ids)
        return self._docs(ids) if ids else []

    def update(self, resource_id: str, change: Callable[[dict[str, Any]], dict[str, Any] | None],
               also: Callable[[Any, dict[str, Any]], None] | None = None) -> dict[str, Any]:
        """Apply `change` to the stored document atomically (retrying on a concurrent write).

        `change` gets a copy and returns the new document, or None to leave it as it is. It may
        raise to refuse the change; nothing is written then. `also(pipe, new)` queues more
        commands in the same transaction: they are written with the change, or not at all.
        """
        key = self.keys.resource(resource_id)

        def write(pipe: Any) -> dict[str, Any]:
            raw = pipe.get(key)
            if raw is None:
                raise NotFound(reasons.resource_id_unknown(resource_id), details={"id": resource_id})
            current = json.loads(raw)
            new = change(dict(current))
            if new is None:
                return current
            new["updatedAt"] = now_iso()
            pipe.multi()
            pipe.set(key, json.dumps(new))
            if also is not None:
                also(pipe, new)
            return new

        return transact(self.redis, write, key)

    def list(
        self,
        kind: str,
        *,
        where: Callable[[dict[str, Any]], bool] = lambda doc: True,
        limit: int = 50,
        after: str | None = None,
        cursor_visible: Callable[[dict[str, Any]], bool] | None = None,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Newest first. Returns one page and the cursor of the next (None at the end).

        The cursor is the id of the last item returned; filtering happens here, page by page of
        the index, so a filter that matches little still fills a page. With `cursor_visible`, a
        cursor naming a document it refuses (another workload's) is as unknown as one naming nothing.
        """
        index = self.keys.index(kind)
        start = 0
        if after:
            rank = self.redis.zrevrank(index, after)
            if rank is not None and cursor_visible is not None:
                cursor_doc = self.get(after)
                rank = rank if cursor_doc is not None and cursor_visible(cursor_doc) else None
            if rank is None:  # not a cursor this list gave: starting over would repeat items silently
                raise ValidationFailed(reasons.cursor_unknown(after), details={"field": "after"})
            start = rank + 1
        page: list[dict[str, Any]] = []
        batch = max(limit * 2, 100)
        while len(page) < limit:
            ids = self.redis.zrevrange(index, start, start + batch - 1)
            if not ids:
                return page, None
            for rid, doc in zip(ids, self._docs(ids)):
                start += 1
                if doc is not None and where(doc):
                    page.append(doc)
                    if len(page) == limit:
                        more = self.redis.zcard(index) > start
                        return page, (doc["id"] if more else None)
        return page, None

    def _docs(self, ids: list[bytes | str]) -> list[dict[str, Any] | None]:
        ids = [i.decode() if isinstance(i, bytes) else i for i in ids]
        raws = self.redis.mget([self.keys.resource(i) for i in ids])
        return [json.loads(r) if r else None for r in raws]

    # --- events: info | warn | error lines of a resource
    def add_event(self, resource_id: str, message: str, *, level: str = "info", **fields: Any) -> dict[str, Any]:
        event = {"time": now_iso(), "level": level, "message": message, **fields}
        self.redis.rpush(self.keys.events(resource_id), json.dumps(event))
        return event

    def events(self, resource_id: str, *, start: int = 0) -> list[dict[str, Any]]:
        return [json.loads(e) for e in self.redis.lrange(self.keys.events(resource_id), start, -1)]

    # --- metrics: one JSON point per logged training step
    def add_metrics(self, run_id: str, point: dict[str, Any]) -> None:
        self.redis.rpush(self.keys.metrics(run_id), json.dumps(point))

    def metrics(self, run_id: str, *, start: int = 0) -> list[dict[str, Any]]:
        return [json.loads(m) for m in self.redis.lrange(self.keys.metrics(run_id), start, -1)]

    # --- rollout samples: one JSON entry per GRPO step, only the last `keep` kept (LTRIM)
    def add_samples(self, run_id: str, sample: dict[str, Any], *, keep: int) -> None:
        key = self.keys.samples(run_id)
        pipe = self.redis.pipeline()
        pipe.rpush(key, json.dumps(sample, allow_nan=False))
        pipe.ltrim(key, -keep, -1)
        pipe.execute()

    def samples(self, run_id: str, *, last: int | None = None) -> list[dict[str, Any]]:
        """Every kept sample, oldest first; with `last`, only the last ones stored."""
        start = -last if last else 0
        return [json.loads(s) for s in self.redis.lrange(self.keys.samples(run_id), start, -1)]

    def sample_count(self, run_id: str) -> int:
        return int(self.redis.llen(self.keys.samples(run_id)))


# How every service's Redis client rides out a Redis that restarts (docs/faults.md). A command that
# meets a connection error (refused, reset, timed out, or Redis still loading its AOF) is sent again
# on a new connection, up to REDIS_RETRIES times, the waits doubling from REDIS_RETRY_BASE_S to at
# most REDIS_RETRY_CAP_S, with jitter so that many clients do not reconnect in step: about 3 s in
# all (2.2 to 4.4 s). Past that the error reaches the caller: the API answers 503 with Retry-After
# (shared/errors.StoreUnavailable), and each service's loop waits and tries its next pass.
REDIS_RETRIES = 6
REDIS_RETRY_BASE_S = 0.1
REDIS_RETRY_CAP_S = 1.0
# A Redis host that is down (not refusing: a refusal is immediate) is given up on after this long.
REDIS_CONNECT_TIMEOUT_S = 2.0
# An answer slower than this counts as a lost connection (and is retried); longer than the one
# blocking command the services send (the scheduler's BLPOP, 1 s).
REDIS_SOCKET_TIMEOUT_S = 5.0
# A pooled connection idle this long is PINGed before it is used, so one that Redis dropped meanwhile
# is replaced before a command is lost on it.
REDIS_HEALTH_CHECK_S = 10


def _settings(retry_class: type) -> dict[str, Any]:
    backoff = EqualJitterBackoff(cap=REDIS_RETRY_CAP_S, base=REDIS_RETRY_BASE_S)
    return {"decode_responses": True, "retry": retry_class(backoff, REDIS_RETRIES),
            "retry_on_error": [redis.ConnectionError, redis.TimeoutError],
            "socket_connect_timeout": REDIS_CONNECT_TIMEOUT_S, "socket_timeout": REDIS_SOCKET_TIMEOUT_S,
            "socket_keepalive": True, "health_check_interval": REDIS_HEALTH_CHECK_S}


def connect(url: str) -> redis.Redis:
    """The Redis client every service uses: it reconnects by itself when Redis comes back."""
    return redis.Redis.from_url(url, **_settings(Retry))


def connect_async(url: str) -> redis.asyncio.Redis:
    """`connect` for asyncio code (the API's proxy), with the same retries and timeouts."""
    return redis.asyncio.Redis.from_url(url, **_settings(AsyncRetry))
