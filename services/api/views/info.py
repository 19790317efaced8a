"""GET /v1/health (no token), GET /v1/info, GET /v1/plans/defaults."""

from __future__ import annotations

from flask import Blueprint

from services.api.context import ctx
from services.api.schemas import HealthSchema, InfoSchema, PlanDefaultsSchema, serialise
from shared.claims.nodes import node_liveness
from shared.config.version import VERSION
from shared.planning.engines import methods
from shared.plans.defaults import plan_defaults

bp = Blueprint("info", __name__)


def pool_summaries() -> list[dict]:
    context = ctx()
    held: dict[str, int] = {}
    for pool in context.config.pools.values():
        for claim in context.claims().held(pool.name):
            held[claim["node"]] = held.get(claim["node"], 0) + len(claim.get("devices") or [])
    summaries = []
    for pool in context.config.pools.values():
        liveness = node_liveness(context.redis, context.keys, pool)
        nodes = [{"name": n.name, "deviceKind": n.device_kind, "gpus": n.device_count,
                  "freeGpus": n.device_count - held.get(n.name, 0), "workerAlive": liveness[n.name].worker,
                  "workerReady": liveness[n.name].worker_ready,
                  "endpointManagerAlive": liveness[n.name].endpoint_manager} for n in pool.nodes]
        summaries.append({"name": pool.name, "gpus": sum(n["gpus"] for n in nodes),
                          "freeGpus": sum(n["freeGpus"] for n in nodes), "nodes": nodes,
                          "quotas": dict(pool.quotas)})
    return summaries


@bp.get("/v1/health")
def health():
    ctx().redis.ping()
    return serialise(HealthSchema, {"status": "ok", "version": VERSION})


@bp.get("/v1/info")
def info():
    """The deployment: version, API address, pools with nodes and free GPUs, methods, catalog size."""
    context = ctx()
    return serialise(InfoSchema, {
        "version": VERSION,
        "apiUrl": context.config.public_url,  # configured, never the request's Host header
        "pools": pool_summaries(),
        "defaultPool": context.config.default_pool,
        "methods": methods(),
        "catalogSize": len(context.config.catalog),
    })


@bp.get("/v1/plans/defaults")
def defaults_of_plans():
    """What each plan field is when a request leaves it out (the dashboard's plan panel marks them)."""
    return serialise(PlanDefaultsSchema, {"defaults": plan_defaults()})
