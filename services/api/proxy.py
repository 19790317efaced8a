"""Requests sent through the trainer to an endpoint (SPEC 2.6, 6): find the endpoint, record the
request time (what idle stop counts), forward to its serving process, stream the answer back.

`POST /v1/chat/completions` and `POST /v1/completions` are served here, by an asyncio (ASGI)
handler in front of the Flask app (services/api/asgi.py), not by Flask: a request through the
trainer should cost little more than one to the serving process itself (target: 2 ms p50 added;
bench/proxy_latency.py, docs/endpoints-benchmark.md), and a WSGI server plus Flask cost several
times that in CPU alone on a small machine. Everything a client sees is the same as from the Flask
views: the bearer tokens, the error shape and sentences, the body checks.

Per request: one Redis `GET` (the endpoint's document by id; by name, the hint key first), the
request to the serving process over a kept-open connection (services/api/upstream.py), the answer
relayed as it comes; an error answer of the serving process (vLLM's shape) is relayed in the API's
one error shape, its words kept (`_relayed_error`). A serving process that refuses or drops the
connection has died (or is dying): the request is refused with the endpoint's phase, as one to an
endpoint that is not READY is, and the endpoint goes back to STARTING (`_process_gone`) until its
endpoint manager sees the process answer again or starts another. Redis out of reach (past the
client's own retries, shared/store/documents.py) is a 503 with Retry-After. `lastRequestAt` is written at most once per `RECORD_EVERY_S` (or a tenth of a
short idle timeout) per endpoint, in a thread (a `WATCH` transaction through the store): idle stop
counts in seconds to hours, so it may lag the last request by that much, never more.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import redis

from services.api import upstream
from services.api.auth import Principal, principal_for
from services.api.context import Context
from shared import reasons
from shared.process import logs
from shared.schemas import json_values
from shared.store.endpoint_names import find_endpoint_async
from shared.errors import (
    BadGateway,
    Conflict,
    EndpointStopped,
    Forbidden,
    Internal,
    MethodNotAllowed,
    NotFound,
    StoreUnavailable,
    TooLarge,
    TrainerError,
    Unauthenticated,
    Unprocessable,
    ValidationFailed,
)
from shared.lifecycle import endpoints as endpoint_lifecycle
from shared.lifecycle.states import EndpointPhase
from shared.store.documents import connect_async
from shared.store.times import now_iso

PROXIED_PATHS = frozenset({"/v1/chat/completions", "/v1/completions"})
RECORD_EVERY_S = 1.0  # the most lastRequestAt lags behind the last request through the trainer


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


class Gateway:
    """The ASGI handler of the proxied OpenAI routes (`PROXIED_PATHS`, POST)."""

    def __init__(self, context: Context):
        self.context = context
        self.redis = connect_async(context.config.redis_url)
        self.pool = upstream.Pool()
        self.log = logs.get("api")

    async def close(self) -> None:
        self.pool.close()
        await self.redis.aclose()

    async def __call__(self, scope: dict, receive, send) -> None:
        path, started = scope["path"], time.perf_counter()
        who: Principal | None = None
        outcome: dict[str, Any] = {"code": 500}
        try:
            who = principal_for(self.context.config, _header(scope, b"authorization"))
            body = _json_object(await self._body(scope, receive), _header(scope, b"content-type"))
            await self._forward(path, body, who, receive, send, outcome)
        except TrainerError as exc:
            outcome["code"] = exc.status
            await _send_json(send, exc.status, exc.to_dict(), headers=_encoded(exc.headers()))
        except _ClientGone:
            outcome["code"] = 499  # logged only: the client closed the request before it was read
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            self.log.warning("store unreachable", path=path, error=f"{type(exc).__name__}: {exc}")
            if "started" not in outcome:
                error = StoreUnavailable()
                outcome["code"] = error.status
                await _send_json(send, error.status, error.to_dict(), headers=_encoded(error.headers()))
        except Exception:
            self.log.exception("unhandled error", path=path)
            if "started" not in outcome:
                await _send_json(send, Internal.status, Internal(reasons.INTERNAL_ERROR).to_dict())
        self.log.info("request", method="POST", path=path, status=outcome["code"],
                      principal=who.name if who else None, endpoint=outcome.get("endpoint"),
                      ms=round((time.perf_counter() - started) * 1000, 2))  # to the answer's last byte

    async def _body(self, scope: dict, receive) -> bytes:
        limit = self.context.config.max_upload_bytes
        declared = _header(scope, b"content-length")
        if declared.isdigit() and int(declared) > limit:
            raise TooLarge(reasons.request_too_large(limit), details={"maxBytes": limit})
        parts, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _ClientGone()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise TooLarge(reasons.request_too_large(limit), details={"maxBytes": limit})
            parts.append(chunk)
            if not message.get("more_body"):
                return b"".join(parts)

    async def _find(self, model: Any, who: Principal) -> dict[str, Any]:
        """The endpoint a proxied request names in `model`: its id, or the name of a live one."""
        if not isinstance(model, str) or not model:
            raise ValidationFailed(reasons.PROXY_MODEL_MISSING, details={"field": "model"})
        doc = await find_endpoint_async(self.redis, self.context.store, model, workloads=who.name_scope)
        if doc is None or not who.may_use(doc.get("workload", "")):
            raise NotFound(reasons.endpoint_unknown(model), details={"field": "model"})
        return doc

    async def _forward(self, path: str, body: dict[str, Any], who: Principal, receive, send,
                       outcome: dict[str, Any]) -> None:
        doc = await self._find(body.get("model"), who)
        outcome["endpoint"] = doc["id"]
        if EndpointPhase(doc["phase"]).is_terminal:
            raise Conflict(reasons.endpoint_ended(doc["id"], doc["phase"], doc.get("detail")),
                           details={"phase": doc["phase"]})
        _refuse_unless_ready(doc)
        if not _recorded_recently(doc, time.time()):
            doc = await asyncio.to_thread(_record_request, self.context, doc["id"])
            _refuse_unless_ready(doc)  # it may have stopped between the read and the write
        served_as = doc.get("adapterName") or doc.get("servedModel") or doc["id"]
        rename = _renamer(served_as, body["model"])
        stream = bool(body.get("stream"))
        try:
            answer = await self.pool.post(doc["address"], path, json.dumps({**body, "model": served_as}).encode(),
                                          api_key=(doc.get("process") or {}).get("apiKey"))
            data = None if stream and answer.status < 400 else await answer.read()  # an error is one body
        except upstream.ProcessGone as exc:
            raise await self._process_gone(doc, exc) from None
        except upstream.UpstreamUnreachable:  # no answer in time, or not HTTP: the process is there
            latest = await find_endpoint_async(self.redis, self.context.store, doc["id"]) or doc
            if latest.get("stopRequested") or latest.get("phase") != EndpointPhase.READY:
                raise EndpointStopped(reasons.endpoint_stopped_before_request(doc["id"]),
                                      details={"phase": latest.get("phase")}) from None
            raise BadGateway(reasons.ENDPOINT_PROCESS_UNREACHABLE, details={"endpoint": doc["id"]}) from None
        which = (b"x-trainer-endpoint", doc["id"].encode())
        headers = [(b"content-type", answer.headers.get("content-type", "application/json").encode("latin-1")), which]
        outcome["code"] = answer.status
        if answer.status >= 400:
            status, error = _relayed_error(doc["id"], answer.status, rename(data) if rename else data)
            outcome["code"], outcome["started"] = status, True
            await _send_json(send, status, error, headers=[which])
            return
        if data is not None:
            data = rename(data) if rename else data
            outcome["started"] = True
            await send({"type": "http.response.start", "status": answer.status,
                        "headers": [*headers, (b"content-length", str(len(data)).encode())]})
            await send({"type": "http.response.body", "body": data})
            return
        await self._relay(doc, answer, rename, headers, receive, send, outcome)

    async def _process_gone(self, seen: dict[str, Any], exc: Exception) -> TrainerError:
        """The refusal of a request whose endpoint's serving process refused or dropped the
        connection (SPEC 6: a request to an endpoint that is not READY is refused with its phase).
        The endpoint is marked STARTING through its one writer (shared/lifecycle/endpoints.py), only
        while it is still READY with that process, so that the requests after this one are refused
        at once; its endpoint manager then sees the process answer (READY again) or starts another."""
        self.log.warning("serving process gone", endpoint=seen["id"], reason=str(exc))
        marked = await asyncio.to_thread(endpoint_lifecycle.process_gone, self.context.store, seen)
        if marked is not None:
            await asyncio.to_thread(self.context.store.add_event, seen["id"], reasons.ENDPOINT_PROCESS_GONE,
                                    level="warn")
        latest = marked or await find_endpoint_async(self.redis, self.context.store, seen["id"]) or seen
        try:
            _refuse_unless_ready(latest)
        except TrainerError as refusal:
            return refusal
        # READY again already, with another process: rare enough that the client's retry is the answer
        return Conflict(reasons.endpoint_not_ready(seen["id"], EndpointPhase.STARTING),
                        details={"phase": EndpointPhase.STARTING.value})

    async def _relay(self, doc: dict[str, Any], answer: upstream.Response, rename, headers, receive, send,
                     outcome) -> None:
        """A streamed answer, each chunk as the serving process sends it (SSE events are chunked).
        If the client goes away the connection to the serving process is dropped, not reused, so
        it stops generating for nobody; if the serving process breaks off, so does the answer
        (the client sees it cut short)."""
        gone = asyncio.Event()

        async def watch_client() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        watcher = asyncio.create_task(watch_client())
        outcome["started"] = True
        await send({"type": "http.response.start", "status": answer.status, "headers": headers})
        chunks = _renamed_lines(answer.chunks(), rename) if rename else answer.chunks()
        try:
            async for chunk in chunks:
                if gone.is_set():
                    outcome["code"] = 499  # logged only: the client closed the request
                    return
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        except upstream.UpstreamUnreachable as exc:
            self.log.warning("the serving process broke off a streamed answer", endpoint=outcome.get("endpoint"),
                             reason=str(exc))
            if isinstance(exc, upstream.ProcessGone):  # the answer is cut short; the next requests are refused
                await self._process_gone(doc, exc)
        finally:
            answer.close()
            watcher.cancel()


class _ClientGone(Exception):
    """The client closed its connection before its request had arrived."""


def _header(scope: dict, name: bytes) -> str:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return ""


def _json_object(raw: bytes, content_type: str) -> dict[str, Any]:
    """The body as a JSON object, under the same rules as the Flask views (a JSON content type;
    nesting bounded and no lone surrogates: services/api/views.json_body)."""
    mimetype = content_type.partition(";")[0].strip().lower()
    if mimetype == "application/json" or (mimetype.startswith("application/") and mimetype.endswith("+json")):
        try:
            body = json_values.loads(raw)
        except json_values.JsonRefused as exc:
            raise ValidationFailed(reasons.request_body_refused(exc.field, exc.problem),
                                   details={"field": exc.field or "(body)"}) from None
        except ValueError:
            body = None
        if isinstance(body, dict):
            return body
    raise ValidationFailed(reasons.REQUEST_BODY_NOT_JSON_OBJECT)


# The error codes of shared/errors.py by status, for relaying a serving process's error answer.
_CODES = {cls.status: cls.code for cls in (ValidationFailed, Unauthenticated, Forbidden, NotFound, MethodNotAllowed,
                                           Conflict, TooLarge, Unprocessable)}


def _relayed_error(endpoint_id: str, status: int, data: bytes) -> tuple[int, dict[str, Any]]:
    """A serving process's error answer in the API's one error shape. vLLM and the built-in server
    answer `{"error": {"message", "type", "param", "code"}}` (older vLLM: `{"message", "type", ...}`
    at the top); the client gets `{"error": {"code", "message", "details"}}` like every other error
    of the API, with the serving process's own words as the message and its status, type and param
    in `details`. A 5xx of the serving process is the trainer's gateway failing: 502."""
    try:
        answer = json.loads(data)
    except (ValueError, RecursionError):
        answer = None
    inner = answer.get("error") if isinstance(answer, dict) else None
    inner = inner if isinstance(inner, dict) else answer if isinstance(answer, dict) else {}
    message = inner.get("message") if isinstance(inner.get("message"), str) else None
    details: dict[str, Any] = {"endpoint": endpoint_id, "status": status}
    details.update({key: inner[key] for key in ("type", "param") if key in inner})
    message = message or reasons.endpoint_answer_unreadable(endpoint_id, status)
    if status >= 500:
        return BadGateway.status, BadGateway(reasons.endpoint_process_failed(endpoint_id, message),
                                             details=details).to_dict()
    code = _CODES.get(status, "bad_request")
    return status, {"error": {"code": code, "message": message, "details": details}}


async def method_not_allowed(scope: dict, send) -> None:
    """405 for any method but POST on a proxied path, as Flask answers it for its own routes."""
    error = MethodNotAllowed(reasons.route_unknown(scope["method"], scope["path"]))
    await _send_json(send, error.status, error.to_dict(), headers=[(b"allow", b"POST")])


def _encoded(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    return [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]


async def _send_json(send, status: int, payload: dict[str, Any], *, headers: list[tuple[bytes, bytes]] = ()) -> None:
    data = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": data})


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


async def _renamed_lines(chunks: AsyncIterator[bytes], rename) -> AsyncIterator[bytes]:
    """Renamed server-sent events, whole lines at a time: a chunk cut inside `"SERVED"` (rare: a
    serving process writes an event at once) waits for the rest of its line."""
    pending = b""
    async for chunk in chunks:
        pending += chunk
        cut = pending.rfind(b"\n") + 1
        if cut:
            yield rename(pending[:cut])
            pending = pending[cut:]
    if pending:
        yield rename(pending)


def models(context: Context, who: Principal) -> dict[str, Any]:
    """GET /v1/models (a Flask view): the READY endpoints this token may use, as OpenAI lists models."""
    ready, _ = context.store.list(
        "ep", where=lambda d: d.get("phase") == EndpointPhase.READY and who.may_use(d.get("workload", "")),
        limit=200)
    return {"object": "list", "data": [
        {"id": d["id"], "object": "model", "owned_by": d["workload"], "name": d.get("name"),
         "root": d["model"], "snapshot": d.get("snapshot")} for d in ready]}
