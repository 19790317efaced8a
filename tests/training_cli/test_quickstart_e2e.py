"""`training quickstart` end to end through the real services (API, scheduler, trainer worker)
and a Redis started for the stack: the embedded default on a machine with nothing but Python."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from shared.process.ports import free_port
from training_cli.main import cli
from training_cli.stack_state import StackState

pytestmark = pytest.mark.e2e


def test_quickstart_teaches_a_skill_that_holds_on_held_out_rows_and_serves_it(home, monkeypatch):
    monkeypatch.setenv("TRAINING_REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")  # not a shared Redis
    runner = CliRunner()
    try:
        up = runner.invoke(cli, ["up", "--detach", "--port", str(free_port())], catch_exceptions=False)
        assert up.exit_code == 0, up.output + _logs()
        result = runner.invoke(cli, ["quickstart"], catch_exceptions=False)
        assert result.exit_code == 0, result.output + _logs()
        assert "the local stack is already up" in result.output and "`training down` stops it" in result.output
        assert "SUCCEEDED in 500 steps" in result.output
        runs = json.loads(runner.invoke(cli, ["runs", "get", "-o", "json"]).output)["items"]
        run = runs[0]
        assert run["status"] == "SUCCEEDED" and run["progress"]["loss"] < run["progress"]["firstLoss"]
        adapter = home / "adapters" / run["id"]
        assert {p.name for p in adapter.iterdir()} >= {"adapter_config.json", "adapter_model.safetensors"}

        # The figures it prints are the two evaluations' own, over the 100 held-out rows.
        evaluations = json.loads(runner.invoke(cli, ["evaluations", "get", "-o", "json"]).output)["items"]
        by_snapshot = {e.get("snapshot"): e for e in evaluations}
        base, tuned = by_snapshot[None], by_snapshot[run["latestSnapshot"]]
        assert base["metrics"]["rows"] == tuned["metrics"]["rows"] == 100
        assert base["metrics"]["exactMatch"] <= 0.1 and tuned["metrics"]["exactMatch"] >= 0.8, (base, tuned)
        printed = dict(re.findall(r"^  (base model|with the adapter) .*: ([0-9.]+)$", result.output, re.M))
        assert float(printed["base model"]) == pytest.approx(base["metrics"]["exactMatch"], abs=0.005)
        assert float(printed["with the adapter"]) == pytest.approx(tuned["metrics"]["exactMatch"], abs=0.005)

        # One answer of the adapter, served behind the endpoint it left READY.
        endpoints = json.loads(runner.invoke(cli, ["endpoints", "get", "-o", "json"]).output)["items"]
        (endpoint,) = [e for e in endpoints if e["name"] == "quickstart"]
        assert endpoint["phase"] == "READY" and endpoint["snapshot"] == run["latestSnapshot"]
        answered = re.search(r"asked 'Reverse: stone', it answered '([^']*)'", result.output)
        assert answered, result.output
    finally:
        down = runner.invoke(cli, ["down"], catch_exceptions=False)
    assert down.output.startswith("stopped ") and StackState().records() == []


def _logs() -> str:
    state = StackState()
    return "".join(f"\n== {p.name}\n" + p.read_text()[-2000:] for p in sorted(state.logs.glob("*.log")))
