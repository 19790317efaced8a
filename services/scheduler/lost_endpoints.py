"""Endpoints of a node whose endpoint manager is gone (SPEC 6, "Outliving a restart"; issue 27).

A live endpoint manager probes its serving processes and notices when one is lost. When the
manager itself (or its whole node) is gone nobody would, and a READY endpoint would keep a dead
address. So each scheduler pass looks at the lease every manager renews
(`node:NODE:endpoint-manager`, services/endpoint_manager/manager.py), counting each absence from
the first pass that saw it (dead_nodes.py; `endpoint-managers:missing-since`, so every scheduler
counts from the same moment). For a node that holds endpoint claims:

- **moved**: once it has had no lease for `nodeDeadAfterS` (3 s), each of its READY and STARTING
  endpoints that another node of the pool could hold (big enough, and a manager holds that node's
  lease) goes back to QUEUED keeping its place: its claim is swapped for a new one with the same
  `seq` (one MULTI), its address and process are cleared (the process is remembered in
  `leftBehind`, for the node's next manager to stop), with the warn event `no endpoint manager runs
  on node NODE; back in the queue keeping its place, to start on a node that has one`. The grant
  rules then place it only on a node whose manager answers (shared/claims/nodes.py);
- **presumed lost** (when no other node could take it): once it has had no lease for longer than
  `worker_lost_after_s`, a READY endpoint goes back to STARTING keeping its claim and devices, with
  no address and `startingSince` = now (its start timeout runs again from that moment), and a warn
  event; a STARTING one gets the same event and fresh `startingSince`, once per absence of the
  manager (`managerMissingSince` on the endpoint names the absence already handled);
- a STARTING one whose start timeout then passes with still no manager becomes FAILED, with a
  detail naming the node, and its claim is released.

A manager that comes back treats a presumed-lost endpoint as any STARTING endpoint: it re-adopts a
serving process that still runs and answers (READY again, same pid and address) or starts a new
one, and on taking the lease it stops the process of an endpoint that failed meanwhile, and the
processes its node left behind when its endpoints moved.

The document is changed first (it names its new claim), then the claim is re-queued: a scheduler
that stops in between leaves a QUEUED endpoint naming a claim that does not exist yet, and the next
pass finishes the re-queue, as for a run (lost.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import structlog

from services.scheduler.dead_nodes import track_absences
from shared import reasons
from shared.claims.nodes import node_liveness
from shared.claims.queue import ClaimQueue
from shared.config.deployment import DeploymentConfig
from shared.lifecycle import endpoints as endpoint_lifecycle
from shared.lifecycle.endpoints import start_timed_out
from shared.lifecycle.states import EndpointPhase
from shared.store.documents import Store
from shared.store.ids import Kind, new_id
from shared.store.times import iso


class LostAction(StrEnum):
    MOVE = "move"  # back to QUEUED under a new claim with the same seq, for a node that has a manager
    RESTART = "restart"  # back to (or again) STARTING without address; start timeout from now
    FAIL = "fail"  # start timeout passed with no manager: FAILED, claim released


@dataclass(frozen=True)
class LostDecision:
    action: LostAction
    detail: str | None = None



def decide_lost(doc: dict[str, Any], *, node: str, missing_since: str, now: float, elsewhere: bool = False,
                presumed_lost: bool = True) -> LostDecision | None:
    """What to do with one endpoint of a node whose manager has been missing since `missing_since`
    (past `nodeDeadAfterS`). `elsewhere`: another node of the pool with a live manager could hold
    it; `presumed_lost`: the absence has lasted past `worker_lost_after_s`. Pure: the stored
    document, the time and those two facts only."""
    phase = doc.get("phase")
    if phase not in (EndpointPhase.READY, EndpointPhase.STARTING):
        return None  # QUEUED: nothing runs yet; ended: nothing to do
    if elsewhere:
        return LostDecision(LostAction.MOVE)
    if not presumed_lost:
        return None
    if phase == EndpointPhase.READY or doc.get("managerMissingSince") != missing_since:
        return LostDecision(LostAction.RESTART)
    if start_timed_out(doc, now):
        return LostDecision(LostAction.FAIL,
                            reasons.endpoint_start_timed_out_without_manager(doc["startTimeout"], node))
    return None


def recover_lost_endpoints(
    *, queue: ClaimQueue, store: Store, config: DeploymentConfig, now: float | None = None, log: Any = None
) -> list[str]:
    """Move the endpoints of nodes without an endpoint manager. Returns the endpoint ids changed."""
    log = log or structlog.get_logger()
    now = time.time() if now is None else now
    claims_of: dict[str, list[dict[str, Any]]] = {}
    managed: dict[str, dict[str, int]] = {}  # pool -> node -> devices, of the nodes a manager holds
    for pool in config.pools.values():
        held = [c for c in queue.held(pool.name) if c["kind"] == "endpoint" and c.get("node")]
        for claim in held:
            claims_of.setdefault(claim["node"], []).append(claim)
        if held:
            liveness = node_liveness(store.redis, store.keys, pool)
            managed[pool.name] = {n.name: n.device_count for n in pool.nodes if liveness[n.name].endpoint_manager}
    pipe = store.redis.pipeline(transaction=False)
    for node in sorted(claims_of):
        pipe.exists(store.keys.endpoint_manager(node))
    present = dict(zip(sorted(claims_of), (bool(up) for up in pipe.execute())))
    absences = track_absences(store.redis, store.keys.endpoint_managers_missing(), present, now=now)
    changed: list[str] = []
    for node, claims in sorted(claims_of.items()):
        if present[node] or not absences.dead(node, now=now, after_s=config.node_dead_after_s):
            continue
        since = iso(absences.since[node])
        presumed_lost = absences.dead(node, now=now, after_s=config.worker_lost_after_s)
        for claim in claims:
            others = managed.get(claim["pool"], {})
            elsewhere = any(devices >= claim["gpus"] for name, devices in others.items() if name != node)
            if _apply(queue, store, claim, node=node, missing_since=since, now=now, elsewhere=elsewhere,
                      presumed_lost=presumed_lost, log=log):
                changed.append(claim["resource"])
    return changed


def _apply(queue: ClaimQueue, store: Store, claim: dict[str, Any], *, node: str, missing_since: str, now: float,
           elsewhere: bool, presumed_lost: bool, log: Any) -> bool:
    decision: LostDecision | None = None
    new_claim_id = new_id(Kind.CLAIM)
    moved_to_queue = False

    def facts(doc: dict[str, Any]) -> dict[str, Any] | None:
        nonlocal decision, moved_to_queue
        if doc.get("phase") == EndpointPhase.QUEUED and (doc.get("scheduling") or {}).get("claim") not in (
                None, claim["id"]):
            moved_to_queue = True  # moved by a pass that stopped before its re-queue: finish it below
            return None
        decision = decide_lost(doc, node=node, missing_since=missing_since, now=now, elsewhere=elsewhere,
                               presumed_lost=presumed_lost)
        if decision is None:
            return None
        if decision.action is LostAction.MOVE:
            return endpoint_lifecycle.recorded(doc, **endpoint_lifecycle.requeued(
                doc, node=node, claim_id=new_claim_id, at=iso(now)))
        if decision.action is LostAction.RESTART:
            return endpoint_lifecycle.recorded(doc, **endpoint_lifecycle.restarting(iso(now)),
                                               managerMissingSince=missing_since)
        return endpoint_lifecycle.recorded(doc, **endpoint_lifecycle.ended(detail=decision.detail, failed=True))

    written = endpoint_lifecycle.record(store, claim["resource"], change=facts)
    if written is None:
        if moved_to_queue:
            doc = store.get(claim["resource"]) or {}
            pending = (doc.get("scheduling") or {}).get("claim")
            if pending and queue.get(pending) is None:
                queue.requeue(claim["id"], new_claim_id=pending)
        return False
    bound = log.bind(endpoint=claim["resource"], node=node, claim=claim["id"])
    if decision.action is LostAction.MOVE:
        queue.requeue(claim["id"], new_claim_id=new_claim_id)
        store.add_event(claim["resource"], reasons.endpoint_moved_off(node), level="warn")
        bound.warning("endpoint manager lost; endpoint back in the queue for another node", newClaim=new_claim_id)
    elif decision.action is LostAction.RESTART:
        store.add_event(claim["resource"], reasons.endpoint_manager_lost(node), level="warn")
        bound.warning("endpoint manager lost; endpoint back to STARTING", missingSince=missing_since)
    else:
        queue.release(claim["id"])
        store.add_event(claim["resource"], decision.detail, level="error")
        bound.warning("endpoint failed: no endpoint manager within its start timeout", detail=decision.detail)
    return True
