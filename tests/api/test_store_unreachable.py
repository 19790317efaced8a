"""With Redis out of reach, both halves of the API (the Flask views and the asyncio proxy) answer
503 in the one error shape, with the sentence of shared/reasons/ and a Retry-After header, as
the OpenAPI document says of every route that reads Redis; never a 500 (issue 14, "Faults").

Redis here is an address where nothing listens, and the client's retries (shared/store/documents.py) are cut
to one so that each request gives up in a fraction of a second instead of about 3 s. A Redis that
is killed and restarted under load is tests/e2e/test_store_restart.py."""

from __future__ import annotations

import threading
import time

import pytest
import requests
import uvicorn

from shared import reasons
from shared.process.ports import free_port
from shared.store import documents as store
from tests.api.openapi_check import problems
from tests.conftest import ADMIN_TOKEN, make_config

UNAVAILABLE = {"error": {"code": "unavailable", "message": reasons.STORE_UNREACHABLE, "details": {"retryAfterS": 2}}}
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


@pytest.fixture
def dead_config(monkeypatch, tmp_path):
    monkeypatch.setattr(store, "REDIS_RETRIES", 1)
    monkeypatch.setattr(store, "REDIS_RETRY_BASE_S", 0.01)
    return make_config(f"redis://127.0.0.1:{free_port()}/0", "unreachable:", tmp_path)


def test_the_sentence_word_for_word():
    assert reasons.STORE_UNREACHABLE == (
        "the trainer cannot reach its store (Redis) right now; it reconnects by itself, "
        "so send the request again in a few seconds")


def test_the_flask_views_answer_503_with_retry_after(dead_config):
    from services.api.app import create_app

    client = create_app(dead_config).test_client()
    document = client.get("/v1/openapi.json").json  # reads no Redis: still served
    for method, path, body in (("get", "/v1/health", None), ("get", "/v1/runs", None),
                               ("get", "/v1/endpoints/ep-0123", None),
                               ("post", "/v1/endpoints", {"model": "builtin/tiny-qwen3"})):
        resp = getattr(client, method)(path, headers=ADMIN, json=body)
        assert resp.status_code == 503, (path, resp.json)
        assert resp.json == UNAVAILABLE and resp.headers["Retry-After"] == "2"
        assert problems(document, {"$ref": "#/components/schemas/Error"}, resp.json) == []


def test_the_proxy_answers_503_with_retry_after(dead_config):
    from services.api.asgi import create_asgi_app

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_asgi_app(dead_config), host="127.0.0.1", port=port, loop="asyncio",
                                           http="httptools", lifespan="on", log_config=None, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline
        time.sleep(0.02)
    try:
        for path in ("/v1/completions", "/v1/chat/completions"):
            for model in ("ep-0123", "by-name"):
                resp = requests.post(f"http://127.0.0.1:{port}{path}", headers=ADMIN, json={"model": model},
                                     timeout=30)
                assert resp.status_code == 503 and resp.json() == UNAVAILABLE, resp.text
                assert resp.headers["Retry-After"] == "2"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def test_the_document_declares_the_503_on_every_route_that_reads_redis(dead_config):
    from services.api.openapi import build_spec

    document = build_spec()
    unavailable = document["components"]["responses"]["Unavailable"]
    assert unavailable["headers"]["Retry-After"]["schema"] == {"type": "integer", "minimum": 1}
    assert unavailable["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            declared = operation["responses"].get("503")
            if path == "/v1/openapi.json":
                assert declared is None
            else:
                assert declared == {"$ref": "#/components/responses/Unavailable"}, (method, path)
