"""Which nodes of a pool have a live worker (its heartbeat key exists).

A node's worker renews `node:NAME:alive` every few seconds (services/trainer_worker/heartbeat.py).
The scheduler grants devices only on nodes whose worker is alive, so a run whose worker was lost
is not handed straight back to the dead node: it waits, saying why, until a worker is back.
"""

from __future__ import annotations

import redis

from shared.config import Pool
from shared.keys import Keys


def live_device_counts(client: redis.Redis, keys: Keys, pool: Pool) -> dict[str, int]:
    """Device count per node of the pool, for the nodes whose worker is alive."""
    pipe = client.pipeline(transaction=False)
    for node in pool.nodes:
        pipe.exists(keys.node_alive(node.name))
    alive = pipe.execute()
    return {node.name: node.device_count for node, up in zip(pool.nodes, alive) if up}
