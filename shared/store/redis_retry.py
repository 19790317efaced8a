"""Redis clients that ride out a Redis blip: every command is retried over a lost connection or a
timeout with a growing pause, for a bounded time in all, then the error is raised.

The trainer worker writes a run's progress, metrics, events, snapshots and lease through such a
client (`connect_retrying`, budget `redisRetryS` of the deployment config, 60 s by default), so a
Redis that restarts under a training run costs the run a pause, not its attempt
(docs/faults.md, "Worker and training"). Services that answer people (the API) keep failing fast.

What a retry does and does not change:
- a read-modify-write under WATCH (`Store.update`) that loses its connection starts again from the
  read (redis-py raises WatchError, the store re-reads), so a fenced write after a blip checks the
  fence against the document as it is then: a stale writer is still refused;
- a command whose reply was lost but which Redis had applied is applied again. The worker's
  writes are written to allow that (a lease it already holds counts as taken; a snapshot id is
  attached once); an event or metrics point may, rarely, appear twice.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any

import redis
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError, TimeoutError
from redis.retry import Retry

DEFAULT_RETRY_S = 60.0
FIRST_PAUSE_S = 0.05  # then doubling, up to MAX_PAUSE_S
MAX_PAUSE_S = 2.0
SOCKET_CONNECT_TIMEOUT_S = 5.0
SOCKET_TIMEOUT_S = 10.0  # a command without an answer this long counts as a lost connection
# TCP keepalive: a Redis that vanished without closing its sockets is noticed after about
# KEEPALIVE_IDLE_S + KEEPALIVE_COUNT * KEEPALIVE_EVERY_S.
KEEPALIVE_IDLE_S = 10
KEEPALIVE_EVERY_S = 5
KEEPALIVE_COUNT = 3


class RetryFor(Retry):
    """redis-py's Retry, bounded by time instead of a count: a command that keeps failing with a
    connection error or a timeout is tried again, pausing FIRST_PAUSE_S, then twice as long each
    time up to MAX_PAUSE_S, until `budget_s` has passed since its first failure."""

    def __init__(self, budget_s: float = DEFAULT_RETRY_S, *, first_s: float = FIRST_PAUSE_S,
                 max_s: float = MAX_PAUSE_S):
        # retries=-1: redis-py's own count is not what stops it; the budget is.
        super().__init__(ExponentialBackoff(cap=max_s, base=first_s), retries=-1,
                         supported_errors=(ConnectionError, TimeoutError, socket.timeout))
        self.budget_s = float(budget_s)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RetryFor) and self.budget_s == other.budget_s and super().__eq__(other)

    __hash__ = Retry.__hash__

    def call_with_retry(self, do: Callable[[], Any], fail: Callable[..., Any],
                        is_retryable: Callable[[Exception], bool] | None = None,
                        with_failure_count: bool = False) -> Any:
        failures = 0
        deadline = None
        while True:
            try:
                return do()
            except self._supported_errors as error:
                if is_retryable and not is_retryable(error):
                    raise
                failures += 1
                fail(error, failures) if with_failure_count else fail(error)
                now = time.monotonic()
                deadline = deadline if deadline is not None else now + self.budget_s
                if now >= deadline:
                    raise
                time.sleep(min(self._backoff.compute(failures), deadline - now))


def keepalive_options() -> dict[int, int]:
    """TCP keepalive settings where the platform has them (Linux does), for redis-py and kombu."""
    wanted = {"TCP_KEEPIDLE": KEEPALIVE_IDLE_S, "TCP_KEEPINTVL": KEEPALIVE_EVERY_S, "TCP_KEEPCNT": KEEPALIVE_COUNT}
    return {getattr(socket, name): value for name, value in wanted.items() if hasattr(socket, name)}


def connect_retrying(url: str, retry_s: float = DEFAULT_RETRY_S) -> redis.Redis:
    """A client like `shared.store.documents.connect`'s whose commands ride out `retry_s` of outage."""
    return redis.Redis.from_url(
        url, decode_responses=True, health_check_interval=30, retry=RetryFor(retry_s),
        socket_connect_timeout=SOCKET_CONNECT_TIMEOUT_S, socket_timeout=SOCKET_TIMEOUT_S,
        socket_keepalive=True, socket_keepalive_options=keepalive_options(),
    )


def unreachable(exc: BaseException | None) -> bool:
    """True when `exc`, or an exception it was raised from, is Redis being out of reach (what a
    retrying client raises once its budget is spent), as opposed to a failure of the work itself."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False
