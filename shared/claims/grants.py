"""Which waiting claims of one pool start now (SPEC 5). Pure Python: no Redis, no Celery.

One pass looks at the waiting claims in queue order (`decide`) and applies these rules:

- **pass over**: a claim whose workload would hold more GPUs of this pool than its quota allows
  (held + granted in this pass + its own) is skipped; claims of *other* workloads after it may
  still start. Later claims of its own workload wait behind it, so a workload's claims start in
  the order they were queued and a large one is never overtaken forever by its own small ones.
- **hold back**: a claim that fits in the free devices of no node stops the pass, so a large claim
  is never overtaken forever by smaller ones queued after it.
- **one node, best fit**: a claim is granted on one node only, the one with the fewest free devices
  that still has enough (ties broken by node name), taking that node's lowest free device indices.
- **only where it would start**: a node takes a claim only while the service that carries out the
  claim's kind answers there (`NodeState.takes`: its worker for runs and evaluations, its endpoint
  manager for endpoints; shared/claims/nodes.py); among the nodes that fit, one whose service is
  ready to start it at once (`NodeState.ready`) comes before best fit.
- **no live service**: a claim that no node taking its kind could ever hold (the nodes big enough
  have no live service for it) is passed over, like one bigger than every node, rather than
  holding back the pool until a node comes back.

A claim that could not fit even on an empty node of the pool (the pool was shrunk after it was
queued; submission refuses such claims) is passed over rather than blocking the pool forever.

Every waiting claim gets one reason token of `shared/claims/wait_reasons.py`; the scheduler grants the
claims `decide` grants, and `waiting.py` explains the others from the same decisions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Union

from shared.claims import wait_reasons


CLAIM_KINDS = frozenset({"run", "evaluation", "endpoint"})


@dataclass(frozen=True)
class ClaimView:
    """What the grant rules need to know about one claim."""

    id: str
    gpus: int
    workload: str
    node: str | None = None  # held claims: the node whose devices they hold
    device_indices: tuple[int, ...] = ()  # held claims: which devices of that node
    kind: str = "run"  # run, evaluation or endpoint: which service of a node carries it out


@dataclass(frozen=True)
class NodeState:
    """One node as the grant rules see it."""

    devices: int
    takes: frozenset[str] = CLAIM_KINDS  # claim kinds whose service answers on the node now
    ready: frozenset[str] | None = None  # of those, the kinds it starts at once (None: all it takes)

    def prefers(self, kind: str) -> bool:
        return kind in (self.takes if self.ready is None else self.ready)


# A node is a device count (every service alive and ready) or a NodeState.
Nodes = Mapping[str, Union[int, NodeState]]


def as_node_states(nodes: Nodes) -> dict[str, NodeState]:
    return {name: n if isinstance(n, NodeState) else NodeState(n) for name, n in nodes.items()}


@dataclass(frozen=True)
class Grant:
    claim_id: str
    node: str
    device_indices: tuple[int, ...]


@dataclass(frozen=True)
class Decision:
    """What one pass does with one waiting claim: a grant, or the reason it keeps waiting."""

    claim: ClaimView
    grant: Grant | None
    reason: str | None  # a wait_reasons token when not granted
    workload_gpus: int  # GPUs its workload holds in the pool at that point of the pass


def device_index(device: str) -> int:
    """`cpu:3` -> 3."""
    return int(device.rpartition(":")[2])


def claim_view(claim: dict[str, Any]) -> ClaimView:
    """The grant rules' view of a claim document."""
    return ClaimView(
        id=claim["id"],
        gpus=int(claim["gpus"]),
        workload=claim["workload"],
        node=claim.get("node"),
        device_indices=tuple(device_index(d) for d in claim.get("devices") or ()),
        kind=claim.get("kind") or "run",
    )


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


def best_fit(free: dict[str, list[int]], gpus: int, preferred: frozenset[str] | set[str] | None = None) -> str | None:
    """The node with the fewest free devices that still has `gpus` free; ties by name. With
    `preferred`, a preferred node that fits comes first (best fit among them)."""
    fitting = [(preferred is not None and name not in preferred, len(idx), name)
               for name, idx in free.items() if len(idx) >= gpus]
    return min(fitting)[2] if fitting else None


def over_quota(claim: ClaimView, used: dict[str, int], quotas: dict[str, int]) -> bool:
    quota = quotas.get(claim.workload)
    return quota is not None and used.get(claim.workload, 0) + claim.gpus > quota


def decide(
    nodes: Nodes,
    held: list[ClaimView],
    waiting: Iterable[ClaimView],
    quotas: dict[str, int],
    *,
    stop_at_hold_back: bool = False,
) -> Iterator[Decision]:
    """One decision per waiting claim, in queue order (the rules in this module's docstring).

    `waiting` may be lazy: with `stop_at_hold_back` the generator stops pulling from it at the
    first claim that holds the rest back (nothing after it can be granted in this pass).
    """
    states = as_node_states(nodes)
    free = free_devices({name: n.devices for name, n in states.items()}, held)
    used = workload_gpus(held)
    largest_node = max((n.devices for n in states.values()), default=0)
    quota_blocked: set[str] = set()  # workloads with an earlier claim waiting on the quota
    held_back = False
    for claim in waiting:
        grant, reason = None, None
        open_nodes = {name for name, n in states.items() if claim.kind in n.takes}
        if claim.gpus > largest_node:
            reason = wait_reasons.EXCEEDS_POOL
        elif not any(states[name].devices >= claim.gpus for name in open_nodes):
            reason = wait_reasons.NO_LIVE_WORKER
        elif over_quota(claim, used, quotas):
            reason = wait_reasons.QUOTA
            quota_blocked.add(claim.workload)
        elif held_back or claim.workload in quota_blocked:
            reason = wait_reasons.QUEUED_BEHIND
        elif (node := best_fit({name: free[name] for name in open_nodes}, claim.gpus,
                               {name for name in open_nodes if states[name].prefers(claim.kind)})) is None:
            reason = wait_reasons.WAITING_FOR_GPUS
            held_back = True
        else:
            grant = Grant(claim.id, node, tuple(free[node][: claim.gpus]))
            free[node] = free[node][claim.gpus :]
            used[claim.workload] = used.get(claim.workload, 0) + claim.gpus
        yield Decision(claim, grant, reason, used.get(claim.workload, 0))
        if held_back and stop_at_hold_back:
            return


def plan_grants(
    nodes: Nodes,
    held: list[ClaimView],
    waiting: Iterable[ClaimView],
    quotas: dict[str, int],
) -> list[Grant]:
    """The grants of one pass over a pool, in queue order.

    `nodes` maps node name to its device count or NodeState, `held` are the granted claims of the pool, `waiting`
    the waiting ones in queue order, `quotas` maps workload to the most GPUs it may hold here.
    """
    decisions = decide(nodes, held, waiting, quotas, stop_at_hold_back=True)
    return [d.grant for d in decisions if d.grant is not None]
