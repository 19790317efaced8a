"""Requests sent through the trainer to an endpoint (SPEC 2.6, 6): find the endpoint, record the
request time (what idle stop counts), forward to its serving process, stream the answer back.

A pooled HTTP session keeps connections to serving processes open, so the proxy adds little to
each request (bench/proxy_latency.py measures it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import requests
from flask import Response

from services.api.auth import Principal
from services.api.context import Context
from services.api.endpoints import endpoint_for_request
from shared import reasons
from shared.errors import BadGateway, Conflict, EndpointStopped
from shared.states import EndpointPhase
from shared.store import now_iso

CHUNK_BYTES = 1024
_session = requests.Session()
_session.trust_env = False  # serving processes are reached directly; no proxy or netrc lookups per request
_session.mount("http://", requests.adapters.HTTPAdapter(pool_connections=32, pool_maxsize=64))


def _record_request(context: Context, endpoint_id: str) -> dict[str, Any]:
    def touch(doc: dict[str, Any]) -> dict[str, Any]:
        doc["lastRequestAt"] = now_iso()
        return doc

    return context.store.update(endpoint_id, touch)


def _refuse_unless_ready(doc: dict[str, Any]) -> None:
    if doc.get("stopRequested") or EndpointPhase(doc["phase"]).is_terminal:
        raise EndpointStopped(reasons.endpoint_stopped_before_request(doc["id"]), details={"phase": doc["phase"]})
    if doc["phase"] != EndpointPhase.READY or not doc.get("address"):
        raise Conflict(reasons.endpoint_not_ready(doc["id"], doc["phase"]), details={"phase": doc["phase"]})


def forward(context: Context, *, path: str, body: dict[str, Any], who: Principal) -> Response:
    doc = endpoint_for_request(context, body.get("model"), who)
    if EndpointPhase(doc["phase"]).is_terminal:
        raise Conflict(reasons.endpoint_not_ready(doc["id"], doc["phase"]), details={"phase": doc["phase"]})
    _refuse_unless_ready(doc)
    doc = _record_request(context, doc["id"])
    _refuse_unless_ready(doc)  # it may have stopped between the read and the write
    upstream_body = {**body, "model": doc.get("adapterName") or doc.get("servedModel") or doc["id"]}
    stream = bool(body.get("stream"))
    try:
        upstream = _session.post(f"{doc['address']}{path}", json=upstream_body, stream=stream, timeout=(5, 600))
    except requests.RequestException:
        latest = context.store.get(doc["id"]) or doc
        if latest.get("stopRequested") or latest.get("phase") != EndpointPhase.READY:
            raise EndpointStopped(reasons.endpoint_stopped_before_request(doc["id"]),
                       details={"phase": latest.get("phase")}) from None
        raise BadGateway(reasons.ENDPOINT_PROCESS_UNREACHABLE, details={"endpoint": doc["id"]}) from None
    headers = {"Content-Type": upstream.headers.get("Content-Type", "application/json"),
               "X-Trainer-Endpoint": doc["id"]}
    if not stream:
        return Response(upstream.content, status=upstream.status_code, headers=headers)

    def relay() -> Iterator[bytes]:
        try:
            yield from upstream.iter_content(chunk_size=None)
        finally:
            upstream.close()

    return Response(relay(), status=upstream.status_code, headers=headers, direct_passthrough=True)


def models(context: Context, who: Principal) -> dict[str, Any]:
    """GET /v1/models: the READY endpoints this token may use, as OpenAI lists models."""
    ready, _ = context.store.list(
        "ep", where=lambda d: d.get("phase") == EndpointPhase.READY and who.may_use(d.get("workload", "")),
        limit=200)
    return {"object": "list", "data": [
        {"id": d["id"], "object": "model", "owned_by": d["workload"], "name": d.get("name"),
         "root": d["model"], "snapshot": d.get("snapshot")} for d in ready]}
