"""The proxied OpenAI routes (services/api/proxy.py), which run on uvicorn's event loop outside
Flask: they answer with the same error shape and sentences as the Flask views, forward to the
endpoint's serving process over kept-open connections, rename the answer's model for a request by
name, relay streamed answers as they come and drop the serving process's connection when the
client goes away. The serving process here is a scripted HTTP peer (tests/api/http_peer.py); real
ones are proxied end to end in tests/e2e/test_endpoints.py."""

from __future__ import annotations

import socket
import time
from datetime import UTC, datetime

import pytest

from shared import reasons
from tests.api.http_peer import HttpPeer


@pytest.fixture
def peer():
    peer = HttpPeer()
    yield peer
    peer.close()


def ready_at(app, client, admin, address: str, stored: dict | None = None, **body) -> dict:
    ep = client.post("/v1/endpoints", headers=admin, json={"model": "builtin/tiny-qwen3", **body}).json
    stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return app.extensions["trainer"].store.update(ep["id"], lambda d: {
        **d, "phase": "READY", "address": address, "readyAt": stamp, "servedModel": "served", **(stored or {})})


def test_errors_have_the_shape_and_sentences_of_the_rest_of_the_api(http, api_url, admin, team, app, client, peer):
    url = f"{api_url}/v1/completions"
    resp = http.post(url, json={"model": "x"})
    assert resp.status_code == 401
    assert resp.json() == {"error": {"code": "unauthenticated", "details": {},
                                     "message": "this request needs an Authorization: Bearer TOKEN header"}}
    assert http.post(url, json={"model": "x"}, headers={"Authorization": "Bearer nope"}).json()["error"][
        "message"] == "this token is not known to the deployment"
    for body in ({"data": b'{"model": "x"}', "headers": {**admin, "Content-Type": "text/plain"}},
                 {"data": b"[1, 2]", "headers": {**admin, "Content-Type": "application/json"}},
                 {"data": b"{not json", "headers": {**admin, "Content-Type": "application/json"}}):
        resp = http.post(url, **body)
        assert resp.status_code == 400 and resp.json()["error"]["message"] == reasons.REQUEST_BODY_NOT_JSON_OBJECT
    # the same sentence as a Flask view gives for the same mistake
    assert client.post("/v1/endpoints", headers=admin, data="[1]", content_type="application/json").json[
        "error"]["message"] == reasons.REQUEST_BODY_NOT_JSON_OBJECT
    resp = http.post(url, headers=admin, json={"model": "x", "prompt": "y" * 300_000})
    assert resp.status_code == 413
    assert resp.json()["error"] == {"code": "too_large", "message": reasons.request_too_large(200_000),
                                    "details": {"maxBytes": 200_000}}
    resp = http.post(url, headers=admin, json={"prompt": "x"})
    assert resp.status_code == 400 and resp.json()["error"]["details"] == {"field": "model"}
    mine = ready_at(app, client, admin, peer.url, name="admins")  # workload of the admin token: not team-a's
    for model in (mine["id"], "admins"):
        resp = http.post(url, headers=team, json={"model": model})
        assert resp.status_code == 404 and resp.json()["error"]["message"] == reasons.endpoint_unknown(model)
    assert peer.requests == []


def test_requests_are_forwarded_over_one_kept_open_connection(http, api_url, admin, app, client, peer):
    ep = ready_at(app, client, admin, peer.url, name="chat")
    for model in (ep["id"], ep["id"], "chat"):
        resp = http.post(f"{api_url}/v1/completions", headers=admin, json={"model": model, "prompt": "hi"})
        assert resp.status_code == 200 and resp.headers["X-Trainer-Endpoint"] == ep["id"]
        # the serving process knows the model as "served"; the answer names what the client asked for
        assert resp.json() == {"model": model, "ok": 1}
    assert [(path, body) for path, body in peer.requests] == [
        ("/v1/completions", b'{"model": "served", "prompt": "hi"}')] * 3
    assert peer.connections == 1


def test_a_streamed_answer_is_relayed_as_it_comes_and_renamed(http, api_url, admin, app, client, peer):
    ready_at(app, client, admin, peer.url, name="chat")
    peer.completions = "stream"
    with http.post(f"{api_url}/v1/chat/completions", headers=admin, stream=True,
                   json={"model": "chat", "messages": [], "stream": True}) as resp:
        assert resp.status_code == 200 and resp.headers["Content-Type"] == "text/event-stream"
        events = resp.iter_lines()
        assert next(events) == b'data: {"model": "chat", "n": 1}'  # before the peer sends the rest
        peer.release.set()
        rest = [line for line in events if line]
    assert rest == [b'data: {"model": "chat", "n": 2}', b"data: [DONE]"]


def test_a_client_that_goes_away_mid_stream_closes_the_serving_process_connection(api_url, admin, app, client, peer):
    ep = ready_at(app, client, admin, peer.url)
    peer.completions = "slow_stream"
    port = int(api_url.rsplit(":", 1)[1])
    body = f'{{"model": "{ep["id"]}", "prompt": "x", "stream": true}}'.encode()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     + f"Authorization: {admin['Authorization']}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                     + body)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
    assert peer.reader_gone.wait(5), "the proxy kept reading a stream nobody wanted"


def starting_refusal(endpoint_id: str) -> dict:
    """What a request to an endpoint that is STARTING gets (SPEC 6): 409 with its phase sentence."""
    return {"code": "conflict", "message": reasons.endpoint_not_ready(endpoint_id, "STARTING"),
            "details": {"phase": "STARTING"}}


def test_a_serving_process_that_breaks_off_is_refused_with_the_phase_and_sent_back_to_starting(
        http, api_url, admin, app, client, peer):
    """A serving process that closes the connection before its answer is complete has died (or is
    dying): not a 502, but the refusal of an endpoint that is not READY, and the endpoint is STARTING
    (through shared/lifecycle/endpoints.process_gone) so the next request is refused at once."""
    ep = ready_at(app, client, admin, peer.url, {"process": {"pid": 4242, "startedAt": "2026-01-01T00:00:00.000Z"}})
    peer.completions = "break"
    resp = http.post(f"{api_url}/v1/completions", headers=admin, json={"model": ep["id"]})
    assert resp.status_code == 409 and resp.json()["error"] == starting_refusal(ep["id"])
    doc = app.extensions["trainer"].store.get(ep["id"])
    assert doc["phase"] == "STARTING" and doc["address"] is None and doc["processLost"]["pid"] == 4242
    assert doc["startingSince"] > ep["readyAt"]
    events = [e["message"] for e in app.extensions["trainer"].store.events(ep["id"])]
    assert events[-1] == reasons.ENDPOINT_PROCESS_GONE
    peer.completions = "plain"
    forwarded = len(peer.requests)
    resp = http.post(f"{api_url}/v1/completions", headers=admin, json={"model": ep["id"]})
    assert resp.status_code == 409 and resp.json()["error"] == starting_refusal(ep["id"])
    assert len(peer.requests) == forwarded  # refused at once, not sent


def test_a_serving_process_that_refuses_the_connection_is_refused_with_the_phase(http, api_url, admin, app, client):
    from shared.process.ports import free_port

    ep = ready_at(app, client, admin, f"http://127.0.0.1:{free_port()}")  # nothing listens there
    for path in ("/v1/completions", "/v1/chat/completions"):
        resp = http.post(f"{api_url}{path}", headers=admin, json={"model": ep["id"], "messages": []})
        assert resp.status_code == 409 and resp.json()["error"] == starting_refusal(ep["id"])
    assert app.extensions["trainer"].store.get(ep["id"])["phase"] == "STARTING"


def test_a_serving_process_that_answers_5xx_is_still_a_bad_gateway(http, api_url, admin, app, client, peer):
    """Not a lost process: it answered. Its endpoint stays READY."""
    ep = ready_at(app, client, admin, peer.url)
    peer.completions = "fail"
    resp = http.post(f"{api_url}/v1/completions", headers=admin, json={"model": ep["id"]})
    assert resp.status_code == 502 and resp.json()["error"]["code"] == "bad_gateway"
    assert app.extensions["trainer"].store.get(ep["id"])["phase"] == "READY"
    peer.completions = "plain"
    assert http.post(f"{api_url}/v1/completions", headers=admin, json={"model": ep["id"]}).status_code == 200


def test_the_rest_of_the_api_is_served_by_the_flask_app_on_the_same_address(http, api_url, admin):
    assert http.get(f"{api_url}/v1/health").json()["status"] == "ok"
    assert http.get(f"{api_url}/v1/models", headers=admin).json() == {"object": "list", "data": []}
    resp = http.get(f"{api_url}/v1/completions", headers=admin)  # only POST is proxied
    assert resp.status_code == 405
    assert resp.json()["error"] == {"code": "method_not_allowed", "details": {},
                                    "message": "GET /v1/completions is not part of this API"}
    started = time.monotonic()
    assert http.get(f"{api_url}/v1/endpoints", headers=admin).status_code == 200
    assert time.monotonic() - started < 5
