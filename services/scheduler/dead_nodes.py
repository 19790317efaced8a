"""Nodes that stopped answering (issue 27): since when each has been seen without its service.

A node's trainer worker beats `node:NODE:alive` (10 s TTL, renewed every 3 s); its endpoint manager
holds `node:NODE:endpoint-manager` (15 s TTL, renewed every pass). When such a key is gone the
service is gone, or cut off from Redis. Each scheduler pass records, in a hash, since when it
has seen each key missing (the first pass to see it writes the time, so every scheduler counts
from the same moment; a key that is back clears its entry). Once a node has been missing for
longer than `scheduling.nodeDeadAfterS` (3 s) it is **dead**:

- its dispatched runs and evaluations go back to the queue at once (lost.py), instead of after
  the lease's TTL and `workerLostAfterS` (about 85 s);
- its endpoints move to a node that has a manager (lost_endpoints.py).

The margin beyond the key's own TTL covers a Redis restart that dropped every key with a TTL:
each service writes its key again within about 2 s of Redis answering, within the margin.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import redis


@dataclass(frozen=True)
class Absences:
    """What one pass knows of the nodes it looked at."""

    since: dict[str, float] = field(default_factory=dict)  # node -> epoch seconds it has been missing since
    new: frozenset[str] = frozenset()  # nodes this pass was the first to see missing

    def dead(self, node: str, *, now: float, after_s: float) -> bool:
        """True when `node` has been missing for longer than `after_s`."""
        return node in self.since and now - self.since[node] > after_s


def track_absences(client: redis.Redis, key: str, present: Mapping[str, bool], *, now: float) -> Absences:
    """Record in the hash `key` since when each node of `present` (node -> its key exists) has been
    missing; entries of nodes present again, or no longer looked at, are dropped."""
    raw = client.hgetall(key)
    since = {(k.decode() if isinstance(k, bytes) else k): float(v) for k, v in raw.items()}
    back = [node for node in since if present.get(node, True)]
    if back:
        client.hdel(key, *back)
        for node in back:
            del since[node]
    new = set()
    for node, up in present.items():
        if not up and node not in since:
            if client.hsetnx(key, node, repr(now)):
                new.add(node)
                since[node] = now
            else:  # another scheduler wrote it between our read and now: count from its time
                since[node] = float(client.hget(key, node) or now)
    return Absences(since, frozenset(new))


def lease_node(token: str | None) -> str | None:
    """The node named by a lease token `NODE/HOST/PID:HEX` (services/trainer_worker/lease.py), or None."""
    if not token:
        return None
    holder = token.rsplit(":", 1)[0].split("/")
    return holder[0] if len(holder) == 3 else None
