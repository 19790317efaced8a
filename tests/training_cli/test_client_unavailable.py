"""The CLI's client and a 503 (the trainer's Redis restarting, docs/faults.md): a read is sent
again after Retry-After until it succeeds (for up to RETRY_UNAVAILABLE_S); a write is not, and its
error is the API's sentence. The API here is a scripted Flask app: the 503 itself is the real
API's (tests/api/test_store_unreachable.py, tests/e2e/test_store_restart.py)."""

from __future__ import annotations

import threading

import pytest
from flask import Flask
from werkzeug.serving import make_server

from shared import reasons
from training_cli import client as client_module
from training_cli.client import ApiClient
from training_cli.errors import ApiError

UNAVAILABLE = {"error": {"code": "unavailable", "message": reasons.STORE_UNREACHABLE, "details": {"retryAfterS": 0}}}


@pytest.fixture
def flaky():
    """Answers 503 (Retry-After: 0) to the first `down` requests, then 200."""
    app, state = Flask(__name__), {"down": 2, "seen": 0}

    @app.route("/v1/runs", methods=["GET", "POST"])
    def runs():
        state["seen"] += 1
        if state["down"] > 0:
            state["down"] -= 1
            return UNAVAILABLE, 503, {"Retry-After": "0"}
        return {"items": [], "nextCursor": None}

    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", state
    server.shutdown()


def test_a_read_answered_503_is_sent_again_after_retry_after(flaky):
    url, state = flaky
    assert ApiClient(url, "t").get("/v1/runs") == {"items": [], "nextCursor": None}
    assert state["seen"] == 3


def test_a_write_answered_503_is_not_sent_again(flaky):
    url, state = flaky
    with pytest.raises(ApiError) as refused:
        ApiClient(url, "t").post("/v1/runs", {})
    assert refused.value.status == 503 and str(refused.value.message) == reasons.STORE_UNREACHABLE
    assert state["seen"] == 1


def test_reads_give_up_after_their_budget(flaky, monkeypatch):
    url, state = flaky
    state["down"] = 10 ** 6
    monkeypatch.setattr(client_module, "RETRY_UNAVAILABLE_S", 0.3)
    with pytest.raises(ApiError) as refused:
        ApiClient(url, "t").get("/v1/runs")
    assert refused.value.status == 503 and state["seen"] > 1
