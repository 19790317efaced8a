"""`training quickstart` end to end through the real services (API, scheduler, trainer worker)
and a Redis started for the stack: the embedded default on a machine with nothing but Python."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from shared.redis_server import free_port
from training_cli.main import cli
from training_cli.stack_state import StackState

pytestmark = pytest.mark.e2e


def test_quickstart_trains_the_tiny_model_and_downloads_its_adapter(home, monkeypatch):
    monkeypatch.setenv("TRAINING_REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")  # not a shared Redis
    runner = CliRunner()
    try:
        up = runner.invoke(cli, ["up", "--detach", "--port", str(free_port())], catch_exceptions=False)
        assert up.exit_code == 0, up.output + _logs()
        result = runner.invoke(cli, ["quickstart"], catch_exceptions=False)
        assert result.exit_code == 0, result.output + _logs()
        assert "SUCCEEDED in 200 steps" in result.output
        runs = json.loads(runner.invoke(cli, ["runs", "get", "-o", "json"]).output)["items"]
        run = runs[0]
        assert run["status"] == "SUCCEEDED" and run["progress"]["loss"] < run["progress"]["firstLoss"]
        adapter = home / "adapters" / run["id"]
        assert {p.name for p in adapter.iterdir()} >= {"adapter_config.json", "adapter_model.safetensors"}
    finally:
        down = runner.invoke(cli, ["down"], catch_exceptions=False)
    assert down.output.startswith("stopped ") and StackState().records() == []


def _logs() -> str:
    state = StackState()
    return "".join(f"\n== {p.name}\n" + p.read_text()[-2000:] for p in sorted(state.logs.glob("*.log")))
