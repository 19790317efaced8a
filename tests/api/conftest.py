from __future__ import annotations

import io
import json

import pytest

from services.api.app import create_app
from tests.conftest import ADMIN_TOKEN, TEAM_TOKEN


@pytest.fixture
def app(config):
    return create_app(config)


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
