"""Which services answer on each node of a pool, and so which kinds of claim a node can take.

A node runs two services, each keeping a key with a short TTL alive while it runs:

- its **trainer worker** beats `node:NAME:alive` (services/trainer_worker/heartbeat.py) and, once it
  takes tasks (training stack imported, Celery consuming), `node:NAME:ready`;
- its **endpoint manager** holds `node:NAME:endpoint-manager` (services/endpoint_manager/manager.py).

Runs and evaluations are granted only on nodes whose worker is alive, endpoints only on nodes whose
endpoint manager is: work is never handed to a node where nobody would start it. Among the nodes
that fit, those whose service is ready are preferred (a restarted worker still importing its
training stack is not handed work while another node could start it at once).
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

from shared.claims.grants import NodeState
from shared.config.deployment import Pool
from shared.store.keys import Keys

WORKER = "worker"
ENDPOINT_MANAGER = "endpoint manager"
# The service of a node that carries out each kind of claim, as users read its name.
SERVICE_OF = {"run": WORKER, "evaluation": WORKER, "endpoint": ENDPOINT_MANAGER}


@dataclass(frozen=True)
class NodeLiveness:
    worker: bool  # its heartbeat is fresh
    worker_ready: bool  # ... and it takes tasks
    endpoint_manager: bool  # a manager holds the node's lease

    def answers(self, service: str) -> bool:
        return self.endpoint_manager if service == ENDPOINT_MANAGER else self.worker

    def takes(self) -> frozenset[str]:
        """The claim kinds this node can be granted now."""
        return frozenset(kind for kind, service in SERVICE_OF.items() if self.answers(service))

    def ready(self) -> frozenset[str]:
        """The claim kinds this node can start at once (preferred among nodes that fit)."""
        return frozenset(kind for kind in self.takes() if SERVICE_OF[kind] != WORKER or self.worker_ready)


def node_liveness(client: redis.Redis, keys: Keys, pool: Pool) -> dict[str, NodeLiveness]:
    """Each node of the pool: which of its services answer (one round trip)."""
    pipe = client.pipeline(transaction=False)
    for node in pool.nodes:
        pipe.exists(keys.node_alive(node.name))
        pipe.exists(keys.node_ready(node.name))
        pipe.exists(keys.endpoint_manager(node.name))
    found = pipe.execute()
    return {node.name: NodeLiveness(bool(found[3 * i]), bool(found[3 * i]) and bool(found[3 * i + 1]),
                                    bool(found[3 * i + 2]))
            for i, node in enumerate(pool.nodes)}


def node_states(pool: Pool, liveness: dict[str, NodeLiveness]) -> dict[str, NodeState]:
    """The grant rules' view of the pool's nodes (shared/claims/grants.py)."""
    down = NodeLiveness(False, False, False)
    return {node.name: NodeState(node.device_count, liveness.get(node.name, down).takes(),
                                 liveness.get(node.name, down).ready())
            for node in pool.nodes}


def pool_node_states(client: redis.Redis, keys: Keys, pool: Pool) -> dict[str, NodeState]:
    """`node_states` of the pool as Redis says now."""
    return node_states(pool, node_liveness(client, keys, pool))
