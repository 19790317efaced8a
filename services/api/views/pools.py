"""Pools: list, get (nodes, holders, quotas, the queue with each claim's reason)."""

from __future__ import annotations

from flask import Blueprint

from services.api import scheduling as service
from services.api.auth import principal
from services.api.context import ctx
from services.api.paging import page
from services.api.schemas import PoolSchema, page_schema, serialise

bp = Blueprint("pools", __name__)


@bp.get("/v1/pools")
def list_pools():
    return serialise(page_schema(PoolSchema), page(service.list_pools(ctx(), principal()), None))


@bp.get("/v1/pools/<pool_name>")
def get_pool(pool_name: str):
    return serialise(PoolSchema, service.pool_view(ctx(), pool_name, principal()))
