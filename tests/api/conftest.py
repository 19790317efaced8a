from __future__ import annotations

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
