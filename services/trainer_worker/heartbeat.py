"""The node's heartbeat: while its worker runs, `node:NAME:alive` exists (renewed every
HEARTBEAT_EVERY_S, expiring after HEARTBEAT_TTL_S), so the scheduler grants its devices. Once the
worker takes tasks (`mark_ready`: its training stack imported, Celery consuming) the same beat also
keeps `node:NAME:ready`, so the scheduler prefers this node over one still starting (issue 27).

It is also how a worker knows it is its node's **only** worker, which is what lets it reclaim the
work its node's previous worker left behind at once (reclaim.py). The key holds who beats it (host,
pid, the process's start time, a token of this process); a starting worker `take`s it:

- **free**: no worker beat it within HEARTBEAT_TTL_S (the key had expired, or expires while it
  waits): the node's previous worker, if any, is dead (or cut off from Redis, and then fenced out);
- **took over**: it is held by a worker of this same machine whose process is gone (a restart within
  the TTL: the usual case), so it is replaced at once, compare-and-set;
- **shared**: another worker keeps it alive (two workers configured for one node, or one on another
  machine still running): this one runs too, but reclaims nothing, and beats the key only when it
  is free again, so it never hides the other one's absence.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import socket
import threading
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import redis

from shared.store import leases
from shared.store.keys import Keys
from shared.store.times import now_iso

HEARTBEAT_EVERY_S = 3.0
HEARTBEAT_TTL_S = 10
HEARTBEAT_TTL_MS = HEARTBEAT_TTL_S * 1000
TAKE_POLL_S = 0.25
# Beyond a stopping worker's grace: its pool processes' last writes, and the main process's exit.
STOPPING_MARGIN_S = 4.0


class Taken(StrEnum):
    FREE = "free"  # nobody beat it: the node's previous worker is gone
    TOOK_OVER = "took over"  # from a dead process of this machine
    SHARED = "shared"  # another live worker beats it too


@dataclass(frozen=True)
class Holder:
    """Who beats a node's heartbeat (parsed from the key; None fields when it says nothing)."""

    host: str | None
    pid: int | None
    started: str | None  # the process's start time, as this machine counts it
    token: str | None

    @classmethod
    def parse(cls, raw: str | None) -> Holder:
        try:
            value = json.loads(raw or "")
            return cls(value.get("host"), int(value["pid"]) if value.get("pid") else None,
                       value.get("started"), value.get("token"))
        except (ValueError, TypeError, AttributeError, KeyError):
            return cls(None, None, None, None)


def process_started(pid: int) -> str | None:
    """When process `pid` of this machine started (field 22 of /proc/PID/stat, with the boot id,
    so a reused pid or a rebooted machine never looks like the same process); None when there is
    no such process, or only its corpse (a zombie nobody reaped yet: a worker killed with its
    children leaves those where PID 1 does not reap). Without /proc, "alive" when the pid answers
    a signal."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        if fields[0] in ("Z", "X"):
            return None
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        return f"{boot}:{fields[19]}"
    except FileNotFoundError:
        if os.path.isdir("/proc/self"):
            return None  # /proc works here: the process is gone
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return "alive"


def dead_here(host: str | None, pid: int | None, started: str | None = None) -> bool:
    """True when the process `pid` of machine `host` is this machine's and is provably gone: no
    such process, another process under its pid, or this very process (a restart that got the
    same pid, as in a container). False when it may be alive, or lives elsewhere."""
    if host != socket.gethostname() or not pid:
        return False
    if pid == os.getpid():
        return True
    now = process_started(pid)
    return now is None or (started is not None and now not in ("alive", started))


class NodeHeartbeat:
    def __init__(self, client: redis.Redis, keys: Keys, node: str):
        self.redis = client
        self.node = node
        self.key = keys.node_alive(node)
        self.ready_key = keys.node_ready(node)
        self.stopping_key = keys.node_stopping(node)
        self.ready = False  # set by mark_ready once the worker takes tasks
        self.value = json.dumps({"node": node, "host": socket.gethostname(), "pid": os.getpid(),
                                 "started": process_started(os.getpid()), "token": secrets.token_hex(8),
                                 "since": now_iso()})
        self.taken: Taken | None = None
        self.previous: Holder | None = None  # whom it took over from
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{node}", daemon=True)

    def take(self, *, wait_s: float = HEARTBEAT_TTL_S + 1.0) -> Taken:
        """Become the node's heartbeat: at once if it is free or its holder is a dead process of
        this machine; else wait up to `wait_s` for it to expire; else share it (see the module)."""
        deadline = time.monotonic() + wait_s
        while True:
            if leases.take(self.redis, self.key, self.value, HEARTBEAT_TTL_MS):
                self.taken = Taken.FREE
                return self.taken
            held = self.redis.get(self.key)
            holder = Holder.parse(held)
            if held is not None and dead_here(holder.host, holder.pid, holder.started):
                if leases.replace(self.redis, self.key, held, self.value, HEARTBEAT_TTL_MS):
                    self.taken, self.previous = Taken.TOOK_OVER, holder
                    return self.taken
                continue  # it changed meanwhile: look again
            if time.monotonic() >= deadline:
                self.taken = Taken.SHARED
                return self.taken
            time.sleep(TAKE_POLL_S)

    @property
    def alone(self) -> bool:
        """True when this worker is its node's only one (it may reclaim the node's orphans)."""
        return self.taken in (Taken.FREE, Taken.TOOK_OVER)

    def beat(self) -> bool:
        """Renew the heartbeat (taking it if it is free) and, once ready, the ready key with it."""
        if not leases.hold(self.redis, self.key, self.value, HEARTBEAT_TTL_MS):
            return False
        if self.ready:
            self.redis.set(self.ready_key, self.value, px=HEARTBEAT_TTL_MS)
        return True

    def mark_ready(self) -> None:
        """The worker takes tasks now: say so with this beat and every later one."""
        self.ready = True
        try:
            self.beat()
        except redis.RedisError:
            pass  # the next beat says it

    def start(self) -> NodeHeartbeat:
        if self.taken is None:
            self.take()
        self.beat()
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(HEARTBEAT_EVERY_S):
            try:
                self.beat()
            except redis.RedisError:
                continue  # the TTL leaves room for the next try

    def stop(self, *, giving_back_s: float | None = None) -> None:
        """Stop beating and drop the keys. `giving_back_s`: the worker was asked to stop and gives
        its work back itself within that long; `node:NODE:stopping` says so for that long (and a
        margin), so that the scheduler, which sees the heartbeat gone at once, does not re-queue
        (and fence out) a run that is saving its last snapshot (stopping.py)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)
        try:
            if giving_back_s is not None and self.taken in (Taken.FREE, Taken.TOOK_OVER):
                self.redis.set(self.stopping_key, self.value, ex=max(1, math.ceil(giving_back_s + STOPPING_MARGIN_S)))
            leases.release(self.redis, self.ready_key, self.value)
            leases.release(self.redis, self.key, self.value)
        except redis.RedisError:
            pass
