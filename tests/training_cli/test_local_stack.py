"""`training up` / `down` with stand-ins for the services (`quickstart`, whose flow needs real
training, evaluations and serving, is tested with the real services: test_quickstart_e2e.py).

The real services (services/api, scheduler, trainer worker) are spawned by the same code; here
`service_commands` is replaced so that the API is tests/training_cli/fake_api.py run as its own process and
the scheduler and worker are idle Python processes. Redis is real: a redis-server started for the
stack on a free port, and stopped by `training down`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import redis
import yaml
from click.testing import CliRunner

from shared.process.ports import free_port
from training_cli import local_stack
from training_cli.main import cli
from training_cli.redis_server import redis_answers
from training_cli.stack_state import StackState, process_alive

FAKE_API = str(Path(__file__).with_name("fake_api.py"))
IDLE = [sys.executable, "-c", "import time; time.sleep(600)"]


@pytest.fixture
def fake_services(monkeypatch):
    def commands(port: int, nodes: list[str]) -> dict[str, list[str]]:
        fake = {"api": [sys.executable, FAKE_API, "--port", str(port)], "scheduler": IDLE}
        fake.update({f"worker-{node}": IDLE for node in nodes})
        return fake

    monkeypatch.setattr(local_stack, "service_commands", commands)
    monkeypatch.setenv("TRAINING_REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")


def test_up_and_down(fake_services, home):
    runner = CliRunner()
    port = free_port()
    try:
        result = runner.invoke(cli, ["up", "--detach", "--port", str(port)], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert f"the local stack is up at http://127.0.0.1:{port}" in result.output
        state = StackState()
        records = {r.name: r for r in state.records()}
        assert set(records) == {"supervisor", "redis", "api", "scheduler", "worker-local"}
        assert all(r.alive() for r in records.values())
        assert (state.root / "admin_token").stat().st_mode & 0o077 == 0
        cli_yaml = yaml.safe_load((home / "cli.yaml").read_text())
        assert cli_yaml == {"apiUrl": f"http://127.0.0.1:{port}", "token": state.admin_token()}
        redis_url = state.info()["redisUrl"]
        assert redis_answers(redis_url)
        # the Redis it started requires the password kept beside the admin token, and refuses the
        # commands that reach beyond the data (issue 14)
        password = state.redis_password()
        assert f":{password}@127.0.0.1:" in redis_url
        assert not redis_answers(redis_url.replace(f":{password}@", "@"))
        with pytest.raises(redis.ResponseError, match="unknown command"):
            redis.Redis.from_url(redis_url).execute_command("CONFIG", "SET", "dir", "/tmp")
        for secret in ("admin_token", "redis_password", "stack.json"):
            assert (state.root / secret).stat().st_mode & 0o077 == 0, secret
        assert password not in " ".join(records["redis"].command)  # in a 0600 file, not on its command line

        again = runner.invoke(cli, ["up", "--detach", "--port", str(port)], catch_exceptions=False)
        assert again.exit_code == 0 and "already up" in again.output
        assert {r.pid for r in state.records()} == {r.pid for r in records.values()}

        # The CLI now finds the stack through cli.yaml alone.
        info = runner.invoke(cli, ["info", "-o", "json"], catch_exceptions=False)
        assert info.exit_code == 0 and json.loads(info.output)["version"] == "0.6.0"
        # the API is told its address (GET /v1/info's apiUrl), never left to a request's Host header
        assert json.loads(info.output)["apiUrl"] == f"http://127.0.0.1:{port}"

    finally:
        down = runner.invoke(cli, ["down"], catch_exceptions=False)
    assert down.exit_code == 0
    assert down.output.startswith("stopped supervisor (pid")
    assert ", worker-local (pid" in down.output
    assert "redis (pid" in down.output
    assert not any(process_alive(r.pid, r.command) for r in records.values())
    assert StackState().records() == []
    assert not redis_answers(redis_url)
    assert runner.invoke(cli, ["down"]).output.strip() == "no local stack is running"


def test_a_service_that_dies_fails_up_with_its_log(fake_services, monkeypatch):
    # The API never answers (an idle process): `up` can only end on the scheduler's exit, whatever
    # the machine's load (with the fake API, a loaded machine let the API answer first).
    def commands(port: int, nodes: list[str]) -> dict[str, list[str]]:
        return {"api": IDLE,
                "scheduler": [sys.executable, "-c", "import sys; print('scheduler: no broker'); sys.exit(3)"]}

    monkeypatch.setattr(local_stack, "service_commands", commands)
    result = CliRunner().invoke(cli, ["up", "--detach", "--port", str(free_port())], catch_exceptions=False)
    assert result.exit_code == 1
    assert "scheduler exited with code 3" in result.output
    assert "scheduler: no broker" in result.output
    assert result.output.rstrip().endswith("error: the local stack did not come up (scheduler exited with code 3)")
    assert StackState().records() == []  # what did start was stopped again


def test_with_no_redis_named_the_stack_starts_its_own_rather_than_using_whatever_answers(fake_services, monkeypatch):
    """The embedded default names no Redis: the stack does not write into a Redis that happens to
    answer at 127.0.0.1:6379 (another user's, unauthenticated), it starts its own, with a password."""
    monkeypatch.delenv("TRAINING_REDIS_URL")
    runner = CliRunner()
    try:
        result = runner.invoke(cli, ["up", "--detach", "--port", str(free_port())], catch_exceptions=False)
        assert result.exit_code == 0
        state = StackState()
        url = state.info()["redisUrl"]
        assert url.startswith(f"redis://:{state.redis_password()}@127.0.0.1:") and ":6379/" not in url
        # what it prints names the Redis and where its password is, never the password
        assert state.redis_password() not in result.output
        port = url.rsplit(":", 1)[1].split("/")[0]
        assert f"started Redis at redis://:***@127.0.0.1:{port}/0" in result.output.replace("\n", "")
        assert str(state.redis_password_path) in result.output.replace("\n", "")
        assert "redis" in {r.name for r in state.records()} and redis_answers(url)
    finally:
        runner.invoke(cli, ["down"], catch_exceptions=False)
