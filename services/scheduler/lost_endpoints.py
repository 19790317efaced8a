"""Endpoints of a node whose endpoint manager is gone (SPEC 6, "Outliving a restart").

A live endpoint manager probes its serving processes and notices when one is lost. When the
manager itself (or its whole node) is gone nobody would, and a READY endpoint would keep a dead
address. So each scheduler pass looks at the lease every manager renews
(`node:NODE:endpoint-manager`, services/endpoint_manager/manager.py). When a node that holds
endpoint claims has had no lease for longer than `worker_lost_after_s` (the threshold of a lost
trainer worker too), counted from the first pass that saw it missing (recorded in
`endpoint-managers:missing-since`, so every scheduler counts from the same moment):

- a READY endpoint goes back to STARTING keeping its claim and devices, with no address and
  `startingSince` = now (its start timeout runs again from that moment), and a warn event;
- a STARTING one gets the same event and fresh `startingSince`, once per absence of the manager
  (`managerMissingSince` on the endpoint names the absence already handled);
- a STARTING one whose start timeout then passes with still no manager becomes FAILED, with a
  detail naming the node, and its claim is released.

A manager that comes back treats them as any STARTING endpoint: it re-adopts a serving process that
still runs and answers (READY again, same pid and address) or starts a new one, and on taking the
lease it stops the process of an endpoint that failed meanwhile.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import structlog

from shared import reasons
from shared.claims.queue import ClaimQueue
from shared.config import DeploymentConfig
from shared.lifecycle import endpoints as endpoint_lifecycle
from shared.lifecycle.endpoints import start_timed_out
from shared.states import EndpointPhase
from shared.store import Store
from shared.times import iso


class LostAction(StrEnum):
    RESTART = "restart"  # back to (or again) STARTING without address; start timeout from now
    FAIL = "fail"  # start timeout passed with no manager: FAILED, claim released


@dataclass(frozen=True)
class LostDecision:
    action: LostAction
    detail: str | None = None



def decide_lost(doc: dict[str, Any], *, node: str, missing_since: str, now: float) -> LostDecision | None:
    """What to do with one endpoint of a node whose manager has been missing since `missing_since`
    (past the threshold). Pure: the stored document and the time only."""
    phase = doc.get("phase")
    if phase == EndpointPhase.READY:
        return LostDecision(LostAction.RESTART)
    if phase != EndpointPhase.STARTING:
        return None  # QUEUED: nothing runs yet; ended: nothing to do
    if doc.get("managerMissingSince") != missing_since:
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
    for pool in config.pools:
        for claim in queue.held(pool):
            if claim["kind"] == "endpoint" and claim.get("node"):
                claims_of.setdefault(claim["node"], []).append(claim)
    client, missing_key = store.redis, store.keys.endpoint_managers_missing()
    nodes = sorted(claims_of)
    pipe = client.pipeline(transaction=False)
    for node in nodes:
        pipe.exists(store.keys.endpoint_manager(node))
    pipe.hgetall(missing_key)
    *leases, raw_missing = pipe.execute()
    missing = {k.decode() if isinstance(k, bytes) else k: float(v) for k, v in raw_missing.items()}
    leased = dict(zip(nodes, leases))
    back = [node for node in missing if leased.get(node, True)]  # a manager again, or no endpoint claims
    if back:
        client.hdel(missing_key, *back)
    changed: list[str] = []
    for node in nodes:
        if leased[node]:
            continue
        if node not in missing:
            client.hsetnx(missing_key, node, repr(now))  # first pass to see it missing: count from now
            continue
        if now - missing[node] <= config.worker_lost_after_s:
            continue
        since = iso(missing[node])
        for claim in claims_of[node]:
            if _apply(queue, store, claim, node=node, missing_since=since, now=now, log=log):
                changed.append(claim["resource"])
    return changed


def _apply(queue: ClaimQueue, store: Store, claim: dict[str, Any], *, node: str, missing_since: str, now: float,
           log: Any) -> bool:
    decision: LostDecision | None = None

    def facts(doc: dict[str, Any]) -> dict[str, Any] | None:
        nonlocal decision
        decision = decide_lost(doc, node=node, missing_since=missing_since, now=now)
        if decision is None:
            return None
        if decision.action is LostAction.RESTART:
            return endpoint_lifecycle.recorded(doc, **endpoint_lifecycle.restarting(iso(now)),
                                               managerMissingSince=missing_since)
        return endpoint_lifecycle.recorded(doc, **endpoint_lifecycle.ended(detail=decision.detail, failed=True))

    if endpoint_lifecycle.record(store, claim["resource"], claim=claim["id"], change=facts) is None:
        return False
    bound = log.bind(endpoint=claim["resource"], node=node, claim=claim["id"])
    if decision.action is LostAction.RESTART:
        store.add_event(claim["resource"], reasons.endpoint_manager_lost(node), level="warn")
        bound.warning("endpoint manager lost; endpoint back to STARTING", missingSince=missing_since)
    else:
        queue.release(claim["id"])
        store.add_event(claim["resource"], decision.detail, level="error")
        bound.warning("endpoint failed: no endpoint manager within its start timeout", detail=decision.detail)
    return True
