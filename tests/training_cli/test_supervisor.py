"""The local stack's supervisor (training_cli/supervisor.py): a service of `training up` that dies
is started again, with back-off and a line in logs/supervisor.log; its own Redis comes back on the
same port with its data; `training status` shows the restarts; `training down` stops it all, even
when the supervisor itself was killed.

The services are the stand-ins of tests/training_cli/test_local_stack.py (the fake API, idle processes);
Redis and the supervisor are real. The real services under the same supervisor, each killed with
SIGKILL: tests/e2e/test_supervised_stack.py."""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import redis
from click.testing import CliRunner

from shared import reasons
from shared.process.ports import free_port
from training_cli.redis_server import redis_answers
from tests.training_cli.test_local_stack import fake_services  # noqa: F401  (a fixture)
from training_cli import supervisor
from training_cli.main import cli
from training_cli.stack_state import StackState, process_alive


def record(name: str):
    return next(r for r in StackState().records() if r.name == name)


def wait_for(what: str, check, timeout_s: float = 20.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}; supervisor log:\n"
                         + StackState().log_path("supervisor").read_text(errors="replace"))


def restarted(name: str, old_pid: int):
    rec = record(name)
    return rec if rec.pid != old_pid and rec.alive() else None


def test_a_dead_service_is_started_again_with_back_off_and_down_stops_everything(fake_services):  # noqa: F811
    runner = CliRunner()
    assert runner.invoke(cli, ["up", "--detach", "--port", str(free_port())], catch_exceptions=False).exit_code == 0
    state = StackState()
    try:
        first = record("scheduler")
        os.kill(first.pid, signal.SIGKILL)
        second = wait_for("the scheduler again", lambda: restarted("scheduler", first.pid))
        assert (second.restarts, second.last_exit) == (1, -9)
        os.kill(second.pid, signal.SIGKILL)  # at once again: the wait doubles
        third = wait_for("the scheduler a third time", lambda: restarted("scheduler", second.pid))
        assert third.restarts == 2
        log = state.log_path("supervisor").read_text()
        assert reasons.service_restarting("scheduler", -9, delay_s=0.5, restart=1) in log
        assert reasons.service_restarting("scheduler", -9, delay_s=1.0, restart=2) in log
        assert reasons.service_started("scheduler", third.pid, 2) in log

        # its own Redis: SIGKILLed, back on the same port with its AOF
        url = state.info()["redisUrl"]
        client = redis.Redis.from_url(url)
        client.set("kept", "1")
        os.kill(record("redis").pid, signal.SIGKILL)
        wait_for("Redis again", lambda: redis_answers(url))
        assert redis.Redis.from_url(url).get("kept") == b"1"

        shown = json.loads(runner.invoke(cli, ["status", "-o", "json"], catch_exceptions=False).output)
        by_name = {row["name"]: row for row in shown["services"]}
        assert by_name["scheduler"]["restarts"] == 2 and by_name["scheduler"]["running"] is True
        assert by_name["redis"]["restarts"] == 1 and by_name["redis"]["lastExit"] == -9
        assert by_name["api"]["restarts"] == 0 and by_name["supervisor"]["running"] is True
        table = runner.invoke(cli, ["status"], catch_exceptions=False).output
        assert "was killed by SIGKILL" in table and "scheduler" in table
        # a service being started again is not a stack that is down: `up` finds it up
        assert "already up" in runner.invoke(cli, ["up", "--detach"], catch_exceptions=False).output
    finally:
        records = state.records()
        down = runner.invoke(cli, ["down"], catch_exceptions=False)
    assert down.output.startswith("stopped supervisor (pid"), down.output
    assert not any(process_alive(r.pid, r.command) for r in records)
    assert state.records() == [] and not redis_answers(url)
    assert reasons.SUPERVISOR_STOPPING in state.log_path("supervisor").read_text()


def test_down_stops_the_services_a_killed_supervisor_left_behind(fake_services):  # noqa: F811
    runner = CliRunner()
    assert runner.invoke(cli, ["up", "--detach", "--port", str(free_port())], catch_exceptions=False).exit_code == 0
    records = StackState().records()
    os.kill(record("supervisor").pid, signal.SIGKILL)
    wait_for("the supervisor to be gone", lambda: not record("supervisor").alive())
    assert all(r.alive() for r in records if r.name != "supervisor")  # nobody watches them now
    down = runner.invoke(cli, ["down"], catch_exceptions=False)
    assert "api (pid" in down.output and "redis (pid" in down.output
    assert not any(process_alive(r.pid, r.command) for r in records)


def test_the_wait_before_a_restart_doubles_up_to_its_cap_and_starts_over_after_a_long_run(tmp_path, monkeypatch):
    state = StackState(tmp_path)
    state.prepare()
    service = supervisor.Service("api", [sys.executable, "-c", "pass"])
    watcher = supervisor.Supervisor(state, [service])
    now = [1000.0]
    monkeypatch.setattr(supervisor.time, "monotonic", lambda: now[0])
    service.started_at = now[0]
    waits = [watcher._next_delay(service) for _ in range(9)]
    assert waits == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0, 5.0, 5.0]  # capped at 5 s (it was 30 s: issue 26)
    now[0] += supervisor.STABLE_AFTER_S - 1  # up a while, but not long enough: the same failure
    assert watcher._next_delay(service) == 5.0
    service.started_at = now[0]
    now[0] += supervisor.STABLE_AFTER_S  # it ran half a minute before this exit: a new failure
    assert watcher._next_delay(service) == 0.5
    service.started_at = now[0]  # started again, killed again at once: the wait doubles again
    assert watcher._next_delay(service) == 1.0


def test_supervisor_sentences_word_for_word():
    assert reasons.service_restarting("api", -9, delay_s=0.5, restart=1) == (
        "api was killed by SIGKILL; starting it again in 0.5s (restart 1)")
    assert reasons.service_restarting("worker-local", 3, delay_s=30.0, restart=7) == (
        "worker-local exited with code 3; starting it again in 30s (restart 7)")
    assert reasons.service_started("api", 41, 0) == "api started (pid 41)"
    assert reasons.service_started("api", 42, 2) == "api started again (pid 42, restart 2)"
    assert reasons.service_could_not_start("redis", "No such file", 2.0) == (
        "redis could not be started (No such file); trying again in 2s")
    assert reasons.service_did_not_stop("api", 41, 10.0) == "api (pid 41) did not stop within 10s; killed it"
    assert reasons.SUPERVISOR_STOPPING == "stopping the local stack: the services first, then its Redis"
    assert reasons.how_it_ended(0) == "exited with code 0" and reasons.how_it_ended(-15) == "was killed by SIGTERM"
