from __future__ import annotations

import contextlib
import io
import json
import threading
import time

import pytest
import requests
import uvicorn

from services.api.app import create_app
from tests.conftest import ADMIN_TOKEN, TEAM_TOKEN


@pytest.fixture
def app(config):
    return create_app(config)


@contextlib.contextmanager
def served(config):
    """The whole API (services/api/asgi.py: the proxied OpenAI routes run outside Flask) served by
    uvicorn in a thread on a free port; yields its URL. Unlike `python -m services.api.main` it runs
    asyncio's own event loop, not uvloop (the end-to-end tests run the real entry point)."""
    from services.api.asgi import create_asgi_app
    from shared.process.ports import free_port

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_asgi_app(config), host="127.0.0.1", port=port, loop="asyncio",
                                           http="httptools", lifespan="on", log_config=None, log_level="warning"))
    thread = threading.Thread(target=server.run, name="api", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the API did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.fixture
def api_url(config):
    """The whole API served on a free port (`served`)."""
    with served(config) as url:
        yield url


@pytest.fixture
def http():
    with requests.Session() as session:
        session.trust_env = False
        yield session


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def admin():
    return {"Authorization": f"Bearer {ADMIN_TOKEN}"}


@pytest.fixture
def team():
    return {"Authorization": f"Bearer {TEAM_TOKEN}"}


CHAT_ROWS = b"\n".join(
    json.dumps({"messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]}).encode()
    for i in range(4)
)


@pytest.fixture
def dataset(client, admin):
    """A small chat dataset uploaded by the admin token (workload runs)."""
    resp = client.post("/v1/datasets", headers=admin, data={"file": (io.BytesIO(CHAT_ROWS), "d.jsonl")},
                       content_type="multipart/form-data")
    return resp.json["id"]


@pytest.fixture(autouse=True)
def nodes_alive(app, config):
    from tests.conftest import mark_nodes_alive

    context = app.extensions["trainer"]
    mark_nodes_alive(context.redis, context.keys, config)
