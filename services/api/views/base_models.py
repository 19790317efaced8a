"""GET /v1/base-models, GET /v1/base-models/MODEL_ID (ids may contain '/')."""

from __future__ import annotations

from flask import Blueprint

from services.api.context import ctx
from services.api.paging import page
from services.api.schemas import BaseModelSchema, page_schema, serialise
from shared.resolver import startable_assumptions, startable_runs

bp = Blueprint("base_models", __name__)


@bp.get("/v1/base-models")
def list_base_models():
    return serialise(page_schema(BaseModelSchema), page(ctx().catalog.list(), None))


@bp.get("/v1/base-models/<path:model_id>")
def get_base_model(model_id: str):
    context = ctx()
    model = context.catalog.get(model_id)
    return serialise(BaseModelSchema, {
        **model, "startableRuns": startable_runs(model, list(context.config.pools.values())),
        "startableRunsAssume": startable_assumptions()})
