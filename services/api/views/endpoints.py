"""Endpoints (create, list, get, stop, events, serving log) and the OpenAI-compatible surface proxied through the
trainer: GET /v1/models (POST /v1/chat/completions and /v1/completions: proxy.Gateway, outside Flask)."""

from __future__ import annotations

from flask import Blueprint, request

from services.api import endpoints as service
from services.api import proxy
from services.api.auth import principal
from services.api.context import ctx
from services.api.paging import (
    both, id_prefix_filter, label_filter, log_page, page, page_args, states_in, visible_cursor, visible_filter,
)
from services.api.scheduling import with_waits
from services.api.schemas import (
    EndpointLogSchema,
    EndpointSchema,
    EventSchema,
    ModelListSchema,
    log_page_schema,
    page_schema,
    serialise,
)
from services.api.views import json_object_body
from shared.ids import Kind
from shared.states import EndpointPhase

bp = Blueprint("endpoints", __name__)


def _shown(docs: list[dict]) -> list[dict]:
    return [service.with_stops_at(d) for d in with_waits(ctx(), docs, principal())]


def _one(doc: dict) -> dict:
    return serialise(EndpointSchema, _shown([doc])[0])


@bp.post("/v1/endpoints")
def create_endpoint():
    return _one(service.create_endpoint(ctx(), body=json_object_body(), who=principal())), 201


@bp.get("/v1/endpoints")
def list_endpoints():
    limit, after = page_args(Kind.ENDPOINT)
    phase = request.args.get("phase")  # ?status= works too (paging.visible_filter)
    phases = states_in(phase, what="endpoints", known=EndpointPhase, param="phase") if phase is not None else None
    labelled = both(label_filter(), id_prefix_filter(Kind.ENDPOINT))
    items, cursor = ctx().store.list(
        "ep", where=visible_filter(lambda d: (phases is None or d.get("phase") in phases) and labelled(d), what="endpoints",
                                   statuses=EndpointPhase), limit=limit, after=after, cursor_visible=visible_cursor())
    return serialise(page_schema(EndpointSchema), page(_shown(items), cursor))


@bp.get("/v1/endpoints/<endpoint_id>")
def get_endpoint(endpoint_id: str):
    return _one(service.get_endpoint(ctx(), endpoint_id))


@bp.delete("/v1/endpoints/<endpoint_id>")
def stop_endpoint(endpoint_id: str):
    return _one(service.stop_endpoint(ctx(), endpoint_id))


@bp.get("/v1/endpoints/<endpoint_id>/events")
def endpoint_events(endpoint_id: str):
    endpoint = service.get_endpoint(ctx(), endpoint_id)
    events = log_page(lambda start: ctx().store.events(endpoint["id"], start=start))
    return serialise(log_page_schema(EventSchema), events)


@bp.get("/v1/endpoints/<endpoint_id>/logs")
def endpoint_logs(endpoint_id: str):
    return serialise(EndpointLogSchema, service.endpoint_log(ctx(), endpoint_id, lines=request.args.get("lines")))


@bp.get("/v1/models")
def models():
    return serialise(ModelListSchema, proxy.models(ctx(), principal()))
