"""`training stop SERVICE` / `training start SERVICE` (issue 27, item 8): one service of the local
stack stopped and kept stopped by the real supervisor, then started again; the others untouched.

The services are the stand-ins of tests/training_cli/test_local_stack.py (the fake API, idle processes);
Redis and the supervisor are real."""

from __future__ import annotations

import json
import os
import signal

from click.testing import CliRunner

from shared import reasons
from shared.process.ports import free_port
from tests.training_cli.test_local_stack import fake_services  # noqa: F401  (a fixture)
from tests.training_cli.test_supervisor import record, restarted, wait_for
from training_cli.main import cli
from training_cli.stack_state import StackState, process_alive


def test_a_stopped_service_stays_stopped_until_started_again(fake_services):  # noqa: F811
    runner = CliRunner()
    assert runner.invoke(cli, ["up", "--detach", "--port", str(free_port())], catch_exceptions=False).exit_code == 0
    state = StackState()
    try:
        worker, scheduler = record("worker-local"), record("scheduler")
        stopped = runner.invoke(cli, ["stop", "worker-local"], catch_exceptions=False)
        assert stopped.exit_code == 0, stopped.output
        assert stopped.output.strip() == reasons.service_stopped_by_request("worker-local", worker.pid)
        assert not process_alive(worker.pid)
        log = state.log_path("supervisor").read_text()
        assert reasons.service_stopping_on_request("worker-local", worker.pid) in log
        assert reasons.service_held("worker-local") in log

        # The supervisor goes on restarting what dies (the scheduler, killed), not what was stopped.
        os.kill(scheduler.pid, signal.SIGKILL)
        wait_for("the scheduler again", lambda: restarted("scheduler", scheduler.pid))
        held = record("worker-local")
        assert held.pid == worker.pid and held.held and not held.alive() and held.restarts == 0
        shown = json.loads(runner.invoke(cli, ["status", "-o", "json"], catch_exceptions=False).output)
        assert {row["name"]: (row["running"], row["held"]) for row in shown["services"]}["worker-local"] == (
            False, True)
        assert "no (training stop)" in runner.invoke(cli, ["status"], catch_exceptions=False).output
        again = runner.invoke(cli, ["stop", "worker-local"], catch_exceptions=False)
        assert again.output.strip() == reasons.service_already("worker-local", "stopped")

        started = runner.invoke(cli, ["start", "worker-local"], catch_exceptions=False)
        assert started.exit_code == 0, started.output
        back = record("worker-local")
        assert back.pid != worker.pid and back.alive() and not back.held and back.restarts == 0
        assert started.output.strip() == reasons.service_started_by_request("worker-local", back.pid)
        assert runner.invoke(cli, ["start", "worker-local"], catch_exceptions=False).output.strip() == (
            reasons.service_already("worker-local", "running"))

        unknown = runner.invoke(cli, ["stop", "worker-nowhere"])
        assert unknown.exit_code == 1
        assert reasons.no_such_service("worker-nowhere", ["redis", "api", "scheduler", "worker-local"]) in (
            unknown.output)
    finally:
        runner.invoke(cli, ["down"], catch_exceptions=False)
    assert runner.invoke(cli, ["stop", "api"]).output.strip() == (
        "error: no local stack is running; start it with: training up")


def test_stop_and_start_sentences_word_for_word():
    assert reasons.service_stopped_by_request("worker-node-a", 4242) == (
        "stopped worker-node-a (pid 4242); the supervisor leaves it stopped until: training start worker-node-a")
    assert reasons.service_stopped_by_request("worker-node-a", None) == (
        "stopped worker-node-a; the supervisor leaves it stopped until: training start worker-node-a")
    assert reasons.service_started_by_request("api", 7) == "started api (pid 7)"
    assert reasons.service_stopping_on_request("api", 7) == "stopping api (pid 7): training stop asked for it"
    assert reasons.service_held("api") == "api stopped; it stays stopped until: training start api"
    assert reasons.service_already("api", "running") == "api is already running"
    assert reasons.no_such_service("x", ["api", "redis"]) == "the local stack has no service x; its services: api, redis"
