"""Fixtures for the CLI tests: an isolated TRAINING_HOME, the fake API, and a CliRunner that
invokes `training` against it; or the real API (`real_api`, `real_training`)."""

from __future__ import annotations

import threading
from typing import Any, Callable

import pytest
from click.testing import CliRunner, Result
from werkzeug.serving import make_server

from tests.conftest import ADMIN_TOKEN, mark_nodes_alive
from tests.training_cli.fake_api import TOKEN, FakeApi
from training_cli.main import cli


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    """Every test gets its own TRAINING_HOME and no API settings from the caller's environment."""
    monkeypatch.setenv("TRAINING_HOME", str(tmp_path / "home"))
    for name in ("TRAINING_API_URL", "TRAINING_TOKEN", "TRAINING_CONFIG", "TRAINING_REDIS_URL",
                 "TRAINING_ARTIFACT_ROOT", "TRAINING_ADMIN_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


@pytest.fixture
def api():
    with FakeApi() as fake:
        yield fake


@pytest.fixture
def training(api) -> Callable[..., Result]:
    """Run `training ARGS` against the fake API (URL and token by environment)."""
    runner = CliRunner()

    def invoke(*args: str, env: dict[str, Any] | None = None, **kwargs: Any) -> Result:
        full_env = {"TRAINING_API_URL": api.url, "TRAINING_TOKEN": TOKEN, **(env or {})}
        return runner.invoke(cli, list(args), env=full_env, catch_exceptions=False, **kwargs)

    return invoke


@pytest.fixture
def real_api(config):
    """The real API (services/api) in a thread on real Redis, no scheduler or worker:
    `{url, context}`, the context for writing what a worker would."""
    from services.api.app import create_app
    from shared.process import logs

    logs.configure("api", "WARNING")  # the API's request log goes to the real stderr, not the CLI's output
    app = create_app(config)
    context = app.extensions["trainer"]
    mark_nodes_alive(context.redis, context.keys, config)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield {"url": f"http://127.0.0.1:{server.server_port}", "context": context}
    server.shutdown()


@pytest.fixture
def real_training(real_api) -> Callable[..., Result]:
    """Run `training ARGS` against the real API with the admin token; `ok=True` asserts exit 0."""
    runner = CliRunner()

    def invoke(*args: str, ok: bool = True) -> Result:
        env = {"TRAINING_API_URL": real_api["url"], "TRAINING_TOKEN": ADMIN_TOKEN}
        result = runner.invoke(cli, list(args), env=env, catch_exceptions=False)
        if ok:
            assert result.exit_code == 0, result.output
        return result

    return invoke
