"""Evaluations: create, list (?comparison=, ?run=), get, cancel (DELETE), events, per-row results (JSONL)."""

from __future__ import annotations

from flask import Blueprint, request, send_file

from services.api import evaluations as service
from services.api.auth import principal
from services.api.context import ctx
from services.api.paging import (
    checked_id, id_prefix_filter, log_page, page, page_args, visible_cursor, visible_filter,
)
from services.api.scheduling import with_waits
from services.api.schemas import EvaluationSchema, EventSchema, log_page_schema, page_schema, serialise
from services.api.views import json_object_body
from shared.ids import Kind
from shared.states import EvaluationStatus

bp = Blueprint("evaluations", __name__)


def _shown(docs: list[dict]) -> list[dict]:
    return with_waits(ctx(), docs, principal())


def _one(doc: dict) -> dict:
    return serialise(EvaluationSchema, _shown([doc])[0])


@bp.post("/v1/evaluations")
def create_evaluation():
    return _one(service.create_evaluation(ctx(), body=json_object_body(), who=principal())), 201


@bp.get("/v1/evaluations")
def list_evaluations():
    limit, after = page_args(Kind.EVALUATION)
    # ?comparison= and ?run= (the run whose snapshot it scores), like the snapshots' ?run=
    asked = {"comparison": checked_id("comparison", request.args.get("comparison"), Kind.COMPARISON),
             "run": checked_id("run", request.args.get("run"), Kind.RUN)}
    wanted = {field: value for field, value in asked.items() if value is not None}
    prefixed = id_prefix_filter(Kind.EVALUATION)
    where = visible_filter(lambda d: all(d.get(field) == value for field, value in wanted.items()) and prefixed(d),
                           what="evaluations", statuses=EvaluationStatus)
    items, cursor = ctx().store.list("eval", where=where, limit=limit, after=after,
                                     cursor_visible=visible_cursor())
    return serialise(page_schema(EvaluationSchema), page(_shown(items), cursor))


@bp.get("/v1/evaluations/<evaluation_id>")
def get_evaluation(evaluation_id: str):
    return _one(service.get_evaluation(ctx(), evaluation_id))


@bp.delete("/v1/evaluations/<evaluation_id>")
def cancel_evaluation(evaluation_id: str):
    return _one(service.cancel_evaluation(ctx(), evaluation_id))


@bp.get("/v1/evaluations/<evaluation_id>/events")
def evaluation_events(evaluation_id: str):
    service.get_evaluation(ctx(), evaluation_id)
    events = log_page(lambda start: ctx().store.events(evaluation_id, start=start))
    return serialise(log_page_schema(EventSchema), events)


@bp.get("/v1/evaluations/<evaluation_id>/rows")
def evaluation_rows(evaluation_id: str):
    rows = service.evaluation_rows(ctx(), evaluation_id)
    return send_file(rows, mimetype="application/jsonl", as_attachment=True,
                     download_name=f"{evaluation_id}-rows.jsonl")
