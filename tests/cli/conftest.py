"""Fixtures for the CLI tests: an isolated TRAINING_HOME, the fake API, and a CliRunner that
invokes `training` against it."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from click.testing import CliRunner, Result

from tests.cli.fake_api import TOKEN, FakeApi
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
