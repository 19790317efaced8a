"""The proxy's cheap path (services/api/proxy.py, endpoints.py): the name index and writing
`lastRequestAt` at most once a second per endpoint. Real Redis and the real API under uvicorn; the
endpoint is moved to READY by hand with the address of a scripted HTTP peer (tests/api/http_peer.py;
the serving process is tested end to end in tests/e2e/test_endpoints.py), so a forwarded request
answers 200 and names the endpoint it reached - after the proxy has looked the endpoint up and
recorded the request, which is what these tests look at."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

import pytest

from services.api.proxy import _recorded_recently
from tests.api.http_peer import HttpPeer


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@pytest.fixture
def peer():
    peer = HttpPeer()
    yield peer
    peer.close()


@pytest.fixture
def ready(app, client, admin, peer):
    def ready(**body) -> dict:
        ep = client.post("/v1/endpoints", headers=admin, json={"model": "builtin/tiny-qwen3", **body}).json
        store = app.extensions["trainer"].store
        return store.update(ep["id"], lambda d: {**d, "phase": "READY", "address": peer.url,
                                                 "readyAt": iso(time.time())})
    return ready


def send(http, api_url, admin, model: str):
    return http.post(f"{api_url}/v1/completions", headers=admin, json={"model": model, "prompt": "x", "max_tokens": 1})


def test_lookup_by_name_reads_the_index_and_an_ended_endpoint_is_never_used(app, client, admin, http, api_url,
                                                                             ready):
    context = app.extensions["trainer"]
    index = context.keys.endpoint_name_index("endpoints")
    first = ready(name="chat")
    assert context.redis.hget(index, "chat") == first["id"]  # written with the endpoint
    assert send(http, api_url, admin, "chat").headers["X-Trainer-Endpoint"] == first["id"]  # forwarded

    client.delete(f"/v1/endpoints/{first['id']}", headers=admin)
    context.store.update(first["id"], lambda d: {**d, "phase": "TERMINATED", "address": None})
    resp = send(http, api_url, admin, "chat")  # the entry names an ended endpoint: not used
    assert resp.status_code == 404
    assert resp.json()["error"]["message"] == "no endpoint has the id or name chat; `training endpoints get` lists them"

    second = ready(name="chat")  # the name is free again; the entry follows
    assert context.redis.hget(index, "chat") == second["id"]
    assert send(http, api_url, admin, "chat").headers["X-Trainer-Endpoint"] == second["id"]


def test_last_request_is_written_at_most_once_a_second_per_endpoint(app, client, admin, http, api_url, ready):
    store = app.extensions["trainer"].store
    ep = ready(idleTimeout=3600)
    assert send(http, api_url, admin, ep["id"]).status_code == 200
    first = store.get(ep["id"])["lastRequestAt"]
    assert first is not None  # recorded before forwarding

    recent = iso(time.time() - 0.5)
    store.update(ep["id"], lambda d: {**d, "lastRequestAt": recent})
    send(http, api_url, admin, ep["id"])
    assert store.get(ep["id"])["lastRequestAt"] == recent  # younger than a second: not rewritten

    old = iso(time.time() - 2)
    store.update(ep["id"], lambda d: {**d, "lastRequestAt": old})
    send(http, api_url, admin, ep["id"])
    assert store.get(ep["id"])["lastRequestAt"] > old


def test_the_lag_allowed_is_a_second_or_a_tenth_of_a_short_idle_timeout():
    now = time.time()
    assert _recorded_recently({"idleTimeout": 3600, "lastRequestAt": iso(now - 0.9)}, now)
    assert not _recorded_recently({"idleTimeout": 3600, "lastRequestAt": iso(now - 1.1)}, now)
    assert _recorded_recently({"idleTimeout": 0, "lastRequestAt": iso(now - 0.9)}, now)  # idle stop off
    assert not _recorded_recently({"idleTimeout": 2, "lastRequestAt": iso(now - 0.3)}, now)  # 0.2 s for 2 s
    assert _recorded_recently({"idleTimeout": 2, "lastRequestAt": iso(now - 0.1)}, now)
    assert not _recorded_recently({"idleTimeout": 3600, "lastRequestAt": None}, now)


def test_answers_are_renamed_to_what_the_client_asked_for_only_when_it_differs():
    from services.api.proxy import _renamed_lines, _renamer

    assert _renamer("ep-abc", "ep-abc") is None  # asked by id: the bytes pass untouched
    rename = _renamer("ep-abc", "tuned")
    body = b'{"id":"cmpl-1","model":"ep-abc","choices":[{"text":"say \\"ep-abc\\" ep-abc"}]}'
    assert rename(body) == b'{"id":"cmpl-1","model":"tuned","choices":[{"text":"say \\"ep-abc\\" ep-abc"}]}'
    events = b'data: {"model": "ep-abc", "x": 1}\n\ndata: {"model":"ep-abc"}\n\ndata: [DONE]\n\n'
    cut = [events[:17], events[17:40], events[40:]]  # cut inside "ep-abc"

    async def relayed():
        async def chunks():
            for piece in cut:
                yield piece
        return b"".join([chunk async for chunk in _renamed_lines(chunks(), rename)])

    assert asyncio.run(relayed()) == events.replace(b'"ep-abc"', b'"tuned"')
