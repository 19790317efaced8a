"""Requests sent through the trainer to an endpoint (SPEC 2.6, 6): find the endpoint, record the
request time (what idle stop counts), forward to its serving process, stream the answer back.

A urllib3 pool keeps connections to serving processes open (urllib3 directly: the requests
library's session layers cost ~0.25 ms a request here), so the proxy adds little to each request
(bench/proxy_latency.py measures it; docs/endpoints-benchmark.md). The common path reads Redis
once: the endpoint's document (by id; by name, a hint key first). `lastRequestAt` is written at
most once per `RECORD_EVERY_S` (or a tenth of a short idle timeout) per endpoint: idle stop counts
in seconds to hours, so it may lag the last request by that much, never more.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import urllib3
from flask import Response

from services.api.auth import Principal
from services.api.context import Context
from services.api.endpoints import endpoint_for_request
from shared import reasons
from shared.errors import BadGateway, Conflict, EndpointStopped
from shared.states import EndpointPhase
from shared.store import now_iso

RECORD_EVERY_S = 1.0  # the most lastRequestAt lags behind the last request through the trainer
UPSTREAM_TIMEOUT = urllib3.Timeout(connect=5, read=600)
# Serving processes are reached directly at internal addresses: no proxy from the environment, no
# retries (a refused connection is answered at once, 502 or the stop sentence).
_pool = urllib3.PoolManager(num_pools=32, maxsize=64, retries=False, timeout=UPSTREAM_TIMEOUT)


def _recorded_recently(doc: dict[str, Any], now: float) -> bool:
    """True when `lastRequestAt` is younger than the lag allowed: this request need not rewrite it."""
    idle_timeout_s = doc.get("idleTimeout") or 0
    lag_s = min(RECORD_EVERY_S, idle_timeout_s / 10) if idle_timeout_s > 0 else RECORD_EVERY_S
    last = doc.get("lastRequestAt")
    return bool(last) and now - datetime.fromisoformat(last.replace("Z", "+00:00")).timestamp() < lag_s


def _record_request(context: Context, endpoint_id: str) -> dict[str, Any]:
    def touch(doc: dict[str, Any]) -> dict[str, Any] | None:
        if _recorded_recently(doc, time.time()):
            return None  # another request just wrote it
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
    if not _recorded_recently(doc, time.time()):
        doc = _record_request(context, doc["id"])
        _refuse_unless_ready(doc)  # it may have stopped between the read and the write
    served_as = doc.get("adapterName") or doc.get("servedModel") or doc["id"]
    upstream_body = {**body, "model": served_as}
    rename = _renamer(served_as, body["model"])
    stream = bool(body.get("stream"))
    try:
        upstream = _pool.request("POST", f"{doc['address']}{path}", body=json.dumps(upstream_body).encode(),
                                 headers={"Content-Type": "application/json"}, preload_content=not stream)
    except urllib3.exceptions.HTTPError:
        latest = context.store.get(doc["id"]) or doc
        if latest.get("stopRequested") or latest.get("phase") != EndpointPhase.READY:
            raise EndpointStopped(reasons.endpoint_stopped_before_request(doc["id"]),
                       details={"phase": latest.get("phase")}) from None
        raise BadGateway(reasons.ENDPOINT_PROCESS_UNREACHABLE, details={"endpoint": doc["id"]}) from None
    headers = {"Content-Type": upstream.headers.get("Content-Type", "application/json"),
               "X-Trainer-Endpoint": doc["id"]}
    if not stream:
        return Response(rename(upstream.data) if rename else upstream.data, status=upstream.status, headers=headers)

    def relay() -> Iterator[bytes]:
        try:  # each chunk as the serving process sends it (SSE events are chunked)
            yield from (_renamed_lines(upstream.stream(None), rename) if rename else upstream.stream(None))
        finally:
            # Read to the end, the connection is back in the pool already; cut short (the client
            # went away), it is closed rather than reused with unread data on it.
            upstream.close()

    return Response(relay(), status=upstream.status, headers=headers, direct_passthrough=True)


def _renamer(served_as: str, asked: str):
    """The answer names the model the client asked for (the endpoint's id or name), not the name
    the serving process knows it by. The manager serves a new endpoint under its id (the base, or
    the snapshot's adapter), so a request by id needs nothing; a request by name, or to an endpoint
    created before that, gets the JSON string `"SERVED"` replaced with `"ASKED"`. A JSON string
    that is exactly the served name can only be a `model` field (the ids are unguessable, and
    inside generated text a quote is escaped), so no JSON needs parsing."""
    if asked == served_as:
        return None
    old, new = json.dumps(served_as).encode(), json.dumps(asked).encode()
    return lambda data: data.replace(old, new)


def _renamed_lines(chunks: Iterator[bytes], rename) -> Iterator[bytes]:
    """Renamed server-sent events, whole lines at a time: a chunk cut inside `"SERVED"` (rare: a
    serving process writes an event at once) waits for the rest of its line."""
    pending = b""
    for chunk in chunks:
        pending += chunk
        cut = pending.rfind(b"\n") + 1
        if cut:
            yield rename(pending[:cut])
            pending = pending[cut:]
    if pending:
        yield rename(pending)


def models(context: Context, who: Principal) -> dict[str, Any]:
    """GET /v1/models: the READY endpoints this token may use, as OpenAI lists models."""
    ready, _ = context.store.list(
        "ep", where=lambda d: d.get("phase") == EndpointPhase.READY and who.may_use(d.get("workload", "")),
        limit=200)
    return {"object": "list", "data": [
        {"id": d["id"], "object": "model", "owned_by": d["workload"], "name": d.get("name"),
         "root": d["model"], "snapshot": d.get("snapshot")} for d in ready]}
