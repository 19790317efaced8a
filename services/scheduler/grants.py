"""Which waiting claims of one pool start now (SPEC 5). Pure Python: no Redis, no Celery.

One pass looks at the waiting claims in queue order and applies three rules:

- **pass over**: a claim whose workload would hold more GPUs of this pool than its quota allows
  (held + granted in this pass + its own) is skipped; claims after it may still start.
- **hold back**: a claim that fits in the free devices of no node stops the pass, so a large claim
  is never overtaken forever by smaller ones queued after it.
- **one node, best fit**: a claim is granted on one node only, the one with the fewest free devices
  that still has enough (ties broken by node name), taking that node's lowest free device indices.

A claim that could not fit even on an empty node of the pool (the pool was shrunk after it was
queued; submission refuses such claims) is passed over rather than blocking the pool forever.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class ClaimView:
    """What the grant rules need to know about one claim."""

    id: str
    gpus: int
    workload: str
    node: str | None = None  # held claims: the node whose devices they hold
    device_indices: tuple[int, ...] = ()  # held claims: which devices of that node


@dataclass(frozen=True)
class Grant:
    claim_id: str
    node: str
    device_indices: tuple[int, ...]


def free_devices(nodes: dict[str, int], held: Iterable[ClaimView]) -> dict[str, list[int]]:
    """Free device indices per node, lowest first. Devices of unknown nodes are ignored."""
    busy: dict[str, set[int]] = {name: set() for name in nodes}
    for claim in held:
        if claim.node in busy:
            busy[claim.node].update(claim.device_indices)
    return {name: [i for i in range(count) if i not in busy[name]] for name, count in nodes.items()}


def workload_gpus(held: Iterable[ClaimView]) -> dict[str, int]:
    """GPUs held per workload."""
    used: dict[str, int] = {}
    for claim in held:
        used[claim.workload] = used.get(claim.workload, 0) + claim.gpus
    return used


def best_fit(free: dict[str, list[int]], gpus: int) -> str | None:
    """The node with the fewest free devices that still has `gpus` free; ties by name."""
    fitting = [(len(idx), name) for name, idx in free.items() if len(idx) >= gpus]
    return min(fitting)[1] if fitting else None


def over_quota(claim: ClaimView, used: dict[str, int], quotas: dict[str, int]) -> bool:
    quota = quotas.get(claim.workload)
    return quota is not None and used.get(claim.workload, 0) + claim.gpus > quota


def plan_grants(
    nodes: dict[str, int],
    held: list[ClaimView],
    waiting: list[ClaimView],
    quotas: dict[str, int],
) -> list[Grant]:
    """The grants of one pass over a pool, in queue order.

    `nodes` maps node name to device count, `held` are the granted claims of the pool, `waiting`
    the waiting ones in queue order, `quotas` maps workload to the most GPUs it may hold here.
    """
    free = free_devices(nodes, held)
    used = workload_gpus(held)
    largest_node = max(nodes.values(), default=0)
    grants: list[Grant] = []
    for claim in waiting:
        if claim.gpus > largest_node or over_quota(claim, used, quotas):
            continue  # passed over
        node = best_fit(free, claim.gpus)
        if node is None:
            break  # holds back every claim after it
        taken = tuple(free[node][: claim.gpus])
        free[node] = free[node][claim.gpus :]
        used[claim.workload] = used.get(claim.workload, 0) + claim.gpus
        grants.append(Grant(claim.id, node, taken))
    return grants
