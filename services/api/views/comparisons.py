"""Branch comparisons: create, list, get (the table is derived from its evaluations at read time)."""

from __future__ import annotations

from flask import Blueprint

from services.api import comparisons as service
from services.api.context import ctx
from services.api.paging import id_prefix_filter, page, page_args, visible_cursor, visible_filter
from services.api.schemas import ComparisonSchema, page_schema, serialise
from services.api.views import json_object_body
from shared.ids import Kind
from shared.states import EvaluationStatus

bp = Blueprint("comparisons", __name__)


@bp.post("/v1/comparisons")
def create_comparison():
    from services.api.auth import principal

    return serialise(ComparisonSchema, service.create_comparison(ctx(), body=json_object_body(), who=principal())), 201


@bp.get("/v1/comparisons")
def list_comparisons():
    limit, after = page_args(Kind.COMPARISON)
    where = visible_filter(id_prefix_filter(Kind.COMPARISON), what="comparisons",
                           statuses=EvaluationStatus)  # on the derived status
    shown: dict[str, dict] = {}

    def derived(doc: dict) -> bool:
        view = service.comparison_view(ctx(), doc)
        shown[doc["id"]] = view
        return where(view)

    items, cursor = ctx().store.list("cmp", where=derived, limit=limit, after=after,
                                     cursor_visible=visible_cursor())
    return serialise(page_schema(ComparisonSchema), page([shown[d["id"]] for d in items], cursor))


@bp.get("/v1/comparisons/<comparison_id>")
def get_comparison(comparison_id: str):
    return serialise(ComparisonSchema, service.get_comparison(ctx(), comparison_id))


@bp.delete("/v1/comparisons/<comparison_id>")
def cancel_comparison(comparison_id: str):
    return serialise(ComparisonSchema, service.cancel_comparison(ctx(), comparison_id))
