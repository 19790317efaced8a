"""The node's heartbeat: while its worker runs, `node:NAME:alive` exists (renewed every
HEARTBEAT_EVERY_S, expiring after HEARTBEAT_TTL_S), so the scheduler grants its devices."""

from __future__ import annotations

import json
import os
import socket
import threading

import redis

from shared.keys import Keys
from shared.times import now_iso

HEARTBEAT_EVERY_S = 3.0
HEARTBEAT_TTL_S = 10


class NodeHeartbeat:
    def __init__(self, client: redis.Redis, keys: Keys, node: str):
        self.redis = client
        self.key = keys.node_alive(node)
        self.value = json.dumps({"node": node, "host": socket.gethostname(), "pid": os.getpid(),
                                 "since": now_iso()})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{node}", daemon=True)

    def beat(self) -> None:
        self.redis.set(self.key, self.value, ex=HEARTBEAT_TTL_S)

    def start(self) -> "NodeHeartbeat":
        self.beat()
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(HEARTBEAT_EVERY_S):
            try:
                self.beat()
            except redis.RedisError:
                continue  # the TTL leaves room for the next try

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        try:
            self.redis.delete(self.key)
        except redis.RedisError:
            pass
