"""Scheduling as the API shows it, derived at read time from the claim queues (SPEC 5):
what a queued run waits on, and the pools (GET /v1/pools). Nothing here is stored."""

from __future__ import annotations

import time
from typing import Any

from services.api.auth import Principal
from services.api.context import Context
from shared import reasons
from shared.claims import wait_reasons
from shared.claims.fits import pool_named
from shared.claims.nodes import node_liveness, node_states
from shared.claims.waiting import entry, explain_pool, queue_reasons
from shared.lifecycle.states import RunStatus


def pool_state(context: Context, pool_name: str) -> dict[str, Any]:
    """One read of a pool: its nodes, quotas, held and waiting claims, and the endpoint documents
    among them (for model and idle time)."""
    pool = context.config.pool(pool_name)
    claims = context.claims()
    held, waiting = claims.held(pool_name), claims.waiting(pool_name)
    endpoint_ids = [c["resource"] for c in held + waiting if c["kind"] == "endpoint"]
    liveness = node_liveness(context.redis, context.keys, pool)
    return {
        "pool": pool, "held": held, "waiting": waiting, "liveness": liveness,
        "nodes": node_states(pool, liveness),  # as the scheduler sees them
        "resources": {d["id"]: d for d in context.store.get_many(endpoint_ids)},
    }


def with_waits(context: Context, runs: list[dict[str, Any]], who: Principal) -> list[dict[str, Any]]:
    """The runs (or evaluations, or endpoints), each QUEUED one with `scheduling.position /
    reason / quota / waitingOn / waitingText` filled in; each pool is read once."""
    queued: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        state = run.get("status") or run.get("phase")  # runs have a status, endpoints a phase
        if state == RunStatus.QUEUED and (run.get("scheduling") or {}).get("claim"):
            if context.config.pool(run.get("pool") or "") is not None:
                queued.setdefault(run["pool"], []).append(run)
    now = time.time()
    for pool_name, pool_runs in queued.items():
        state = pool_state(context, pool_name)
        waits = explain_pool(
            pool=pool_name, nodes=state["nodes"], held=state["held"], waiting=state["waiting"],
            quotas=state["pool"].quotas, resources=state["resources"], now=now, may_see=who.may_use,
            only={r["scheduling"]["claim"] for r in pool_runs},
        )
        for run in pool_runs:
            wait = waits.get(run["scheduling"]["claim"]) or {
                # granted, not yet started: the scheduler's dispatch is under way
                "position": None, "reason": wait_reasons.FITS_NOW, "quota": None,
                "waitingOn": {"heldBy": [], "queuedAhead": [], "notAnswering": []},
            }
            run["scheduling"] = {**run["scheduling"], **wait, "waitingText": reasons.waiting_text(wait)}
    return runs


def _node_views(pool: Any, held: list[dict[str, Any]], liveness: dict[str, Any]) -> list[dict[str, Any]]:
    busy: dict[str, set[str]] = {n.name: set() for n in pool.nodes}
    for claim in held:
        busy.setdefault(claim.get("node") or "", set()).update(claim.get("devices") or [])
    return [
        {"name": n.name, "deviceKind": n.device_kind, "gpus": n.device_count,
         "heldGpus": len(busy[n.name] & set(n.devices)), "freeGpus": len(set(n.devices) - busy[n.name]),
         "devices": n.devices, "freeDevices": [d for d in n.devices if d not in busy[n.name]],
         "workerAlive": liveness[n.name].worker, "workerReady": liveness[n.name].worker_ready,
         "endpointManagerAlive": liveness[n.name].endpoint_manager}
        for n in pool.nodes
    ]


def pool_view(context: Context, pool_name: str, who: Principal, *, detail: bool = True) -> dict[str, Any]:
    """A pool: nodes with free and held devices, quotas with current use; with `detail`, also the
    holders and the queue in order with each claim's position and reason."""
    pool_named(context.config, pool_name)  # 404
    state = pool_state(context, pool_name)
    pool, held, waiting = state["pool"], state["held"], state["waiting"]
    nodes = _node_views(pool, held, state["liveness"])
    used: dict[str, int] = {}
    for claim in held:
        used[claim["workload"]] = used.get(claim["workload"], 0) + claim["gpus"]
    view: dict[str, Any] = {
        "name": pool_name, "gpus": sum(n["gpus"] for n in nodes), "freeGpus": sum(n["freeGpus"] for n in nodes),
        "heldGpus": sum(n["heldGpus"] for n in nodes), "waiting": len(waiting), "nodes": nodes,
        "quotas": [{"workload": w, "gpus": q, "held": used.get(w, 0)} for w, q in sorted(pool.quotas.items())],
    }
    if not detail:
        return view
    now = time.time()

    def described(claim: dict[str, Any]) -> dict[str, Any]:
        item = entry(claim, resources=state["resources"], now=now, may_see=who.may_use)
        item["workload"] = claim["workload"] if who.may_use(claim["workload"]) else None
        return item

    view["holders"] = [{**described(c), "node": c.get("node"), "devices": c.get("devices") or []} for c in held]
    ranked = queue_reasons(pool=pool_name, nodes=state["nodes"], held=held, waiting=waiting, quotas=pool.quotas)
    view["queue"] = [
        {"position": position, **described(claim), "quota": quota, "reason": reason}
        for claim, (position, reason, quota) in zip(waiting, ranked)
    ]
    return view


def list_pools(context: Context, who: Principal) -> list[dict[str, Any]]:
    return [pool_view(context, name, who, detail=False) for name in context.config.pools]
