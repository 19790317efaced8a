"""What a waiting claim waits on (SPEC 5), derived from the queue, never stored.

Pure Python over claim documents: the same `grants.decide` the scheduler's pass runs gives every
waiting claim its reason, so a claim's position and reason never disagree with what the scheduler
does. The API calls `explain_pool` once per pool per request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shared.claims import wait_reasons
from shared.claims.grants import ClaimView, Nodes, as_node_states, claim_view, decide, free_devices
from shared.claims.nodes import SERVICE_OF
from shared.store.times import epoch

# The reasons under which a node whose service does not answer is what the claim waits on.
NODE_BOUND = (wait_reasons.WAITING_FOR_GPUS, wait_reasons.NO_LIVE_WORKER)


def idle_seconds(claim: dict[str, Any], doc: dict[str, Any] | None, now: float) -> int | None:
    """How long a granted endpoint has had no request: from its last request, else from when it
    became ready, else from its grant."""
    doc = doc or {}
    since = epoch(doc.get("lastRequestAt")) or epoch(doc.get("readyAt")) or epoch(claim.get("grantedAt"))
    return None if since is None else max(0, int(now - since))


def entry(
    claim: dict[str, Any],
    *,
    resources: dict[str, dict[str, Any]],
    now: float,
    may_see: Callable[[str], bool] = lambda workload: True,
) -> dict[str, Any]:
    """One claim as a `heldBy` / `queuedAhead` entry. Resources of workloads the reader may not
    see keep only their kind and GPU count (id None)."""
    if not may_see(claim["workload"]):
        return {"kind": claim["kind"], "id": None, "gpus": claim["gpus"]}
    item = {"kind": claim["kind"], "id": claim["resource"], "gpus": claim["gpus"]}
    if claim["kind"] == "endpoint":
        doc = resources.get(claim["resource"])
        item["model"] = claim.get("model") or (doc or {}).get("model")
        item["idleSeconds"] = idle_seconds(claim, doc, now) if claim.get("state") == "GRANTED" else None
    return item


def not_answering(claim: ClaimView, nodes: Nodes, held: list[ClaimView]) -> list[dict[str, Any]]:
    """The nodes big enough for `claim` where the service that would carry it out does not answer,
    each with its free devices: `[{node, freeGpus, service}]`, by node name. (A node with devices
    free for it is why a claim "waits for GPUs" while the pool shows some free.)"""
    states = as_node_states(nodes)
    free = free_devices({name: n.devices for name, n in states.items()}, held)
    service = SERVICE_OF.get(claim.kind, SERVICE_OF["run"])
    return [{"node": name, "freeGpus": len(free[name]), "service": service}
            for name, n in sorted(states.items()) if claim.kind not in n.takes and n.devices >= claim.gpus]


def queue_reasons(
    *, pool: str, nodes: Nodes, held: list[dict[str, Any]], waiting: list[dict[str, Any]],
    quotas: dict[str, int],
) -> list[tuple[int, str, dict[str, Any] | None]]:
    """`(position, reason, quota)` of each waiting claim, in queue order: the scheduler's own
    decisions (`grants.decide`). `quota` names the quota when the reason is `quota`."""
    decisions = decide(nodes, [claim_view(c) for c in held], [claim_view(c) for c in waiting], quotas)
    out = []
    for position, (claim, decision) in enumerate(zip(waiting, decisions), start=1):
        reason = decision.reason or wait_reasons.FITS_NOW
        quota = None
        if reason == wait_reasons.QUOTA:
            quota = {"workload": claim["workload"], "gpus": quotas[claim["workload"]],
                     "held": decision.workload_gpus, "pool": pool}
        out.append((position, reason, quota))
    return out


def explain_pool(
    *,
    pool: str,
    nodes: Nodes,
    held: list[dict[str, Any]],
    waiting: list[dict[str, Any]],
    quotas: dict[str, int],
    resources: dict[str, dict[str, Any]],
    now: float,
    may_see: Callable[[str], bool] = lambda workload: True,
    only: set[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """Claim id -> `{position, reason, quota, waitingOn: {heldBy, queuedAhead, notAnswering}}` for
    every waiting claim of the pool (or only those whose id is in `only`). `notAnswering` lists the
    nodes whose service for the claim's kind is down, for a claim waiting on GPUs or on a live
    service (`not_answering`); else it is empty.

    `nodes` maps each node of the pool to its NodeState (or device count: every service alive),
    `held` are the pool's granted claims, `waiting` its waiting claims in queue order (documents
    as `ClaimQueue` stores them), `resources` the documents of endpoints among them (for model
    and idle time), `now` epoch seconds.
    """
    held_by = [entry(c, resources=resources, now=now, may_see=may_see) for c in held]
    held_views = [claim_view(c) for c in held]
    ahead: list[dict[str, Any]] = []
    explained: dict[str, dict[str, Any]] = {}
    reasons = queue_reasons(pool=pool, nodes=nodes, held=held, waiting=waiting, quotas=quotas)
    for claim, (position, reason, quota) in zip(waiting, reasons):
        if only is None or claim["id"] in only:
            down = not_answering(claim_view(claim), nodes, held_views) if reason in NODE_BOUND else []
            explained[claim["id"]] = {
                "position": position, "reason": reason, "quota": quota,
                "waitingOn": {"heldBy": list(held_by), "queuedAhead": list(ahead), "notAnswering": down},
            }
        ahead.append(entry(claim, resources=resources, now=now, may_see=may_see))
    return explained


def explain_wait(
    claim: dict[str, Any],
    *,
    pool: str,
    nodes: Nodes,
    held: list[dict[str, Any]],
    waiting: list[dict[str, Any]],
    quotas: dict[str, int],
    resources: dict[str, dict[str, Any]],
    now: float,
    may_see: Callable[[str], bool] = lambda workload: True,
) -> dict[str, Any] | None:
    """What one waiting claim waits on (see `explain_pool`); None when it is not waiting here."""
    found = explain_pool(pool=pool, nodes=nodes, held=held, waiting=waiting, quotas=quotas,
                         resources=resources, now=now, may_see=may_see, only={claim["id"]})
    return found.get(claim["id"])
