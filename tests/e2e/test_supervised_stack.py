"""The real local stack (`training up --detach` on the embedded default) with each of its
processes SIGKILLed in turn (issue 14, "Faults"): the supervisor (training_cli/supervisor.py)
starts each again, and the test measures how long until the new process does its work again:

- api: `GET /v1/health` answers 200 (from the new process);
- scheduler: the new process logs `scheduler started` (its loop runs: it grants on its next pass);
- worker-local: the node heartbeat names the new process (the scheduler grants the node again)
  and its Celery worker says `ready.` (it consumes the node's queue);
- endpoint-manager-local: the node's endpoint-manager lease names the new process (it acts for
  the node). The lease of the killed one must expire first: shortened here to 3 s
  (TRAINING_ENDPOINT_MANAGER_LEASE_S; 15 s by default, which bounds this figure in production);
- redis: it answers PING on the same port, a dataset uploaded before is still there (AOF), and the
  API answers again without being restarted (the services reconnect by themselves).

The figures are printed (`-s`) and written in docs/faults.md. `training status` then shows one
restart of each, killed by SIGKILL; `training down` leaves nothing running."""

from __future__ import annotations

import json
import os
import signal
import time

import redis
import requests

from shared.process.ports import free_port
from shared.store.keys import Keys
from tests.e2e.stack import REPO, home_env, training
from training_cli.redis_server import redis_answers
from training_cli.stack_state import StackState, process_alive

SAMPLE = REPO / "shared" / "data" / "sample_sft.jsonl"


def test_every_service_of_the_local_stack_killed_with_sigkill_comes_back(tmp_path):
    home = tmp_path / "home"
    env = home_env(home, TRAINING_ENDPOINT_MANAGER_LEASE_S="3")
    port = free_port()
    api_url = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    upped = training(env, "up", "--detach", "--port", str(port))
    assert upped.returncode == 0, upped.stdout + upped.stderr
    up_s = time.monotonic() - started
    state = StackState(home / "stack")
    info = state.info()
    client = redis.Redis.from_url(info["redisUrl"], decode_responses=True)
    keys = Keys("trainer:")  # the embedded default's prefix
    headers = {"Authorization": f"Bearer {state.admin_token()}"}

    def record(name: str):
        return next(r for r in state.records() if r.name == name)

    def health() -> bool:
        try:
            return requests.get(f"{api_url}/v1/health", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    def json_pid(key: str) -> int | None:
        try:
            raw = client.get(key)
        except redis.RedisError:
            return None
        return json.loads(raw).get("pid") if raw and raw.startswith("{") else None

    def lease_pid() -> int | None:
        try:
            token = client.get(keys.endpoint_manager("local"))
        except redis.RedisError:
            return None
        return int(token.split(":")[1]) if token else None

    def logged(name: str, line: str) -> int:
        return state.log_path(name).read_text(errors="replace").count(line)

    try:
        assert client.get(keys.node_alive("local")) and lease_pid() == record("endpoint-manager-local").pid
        dataset = requests.post(f"{api_url}/v1/datasets", headers=headers, timeout=30,
                                files={"file": ("sample.jsonl", SAMPLE.read_bytes())})
        assert dataset.status_code == 201, dataset.text
        starts, readies = logged("scheduler", "scheduler started"), logged("worker-local", " ready.")
        answers = {
            "api": lambda pid: health(),
            "scheduler": lambda pid: logged("scheduler", "scheduler started") > starts,
            "worker-local": lambda pid: json_pid(keys.node_alive("local")) == pid
            and logged("worker-local", " ready.") > readies,
            "endpoint-manager-local": lambda pid: lease_pid() == pid,
            "redis": lambda pid: redis_answers(info["redisUrl"]) and health(),
        }
        recovered_s = {}
        for name, works in answers.items():
            old = record(name).pid
            os.kill(old, signal.SIGKILL)
            killed = time.monotonic()
            deadline = killed + 90
            while True:
                rec = record(name)
                if rec.pid != old and rec.alive() and works(rec.pid):
                    break
                assert time.monotonic() < deadline, (name, state.log_path("supervisor").read_text()[-3000:],
                                                     state.log_path(name).read_text(errors="replace")[-3000:])
                time.sleep(0.05)
            recovered_s[name] = round(time.monotonic() - killed, 1)
        print(f"\nup in {up_s:.1f}s; SIGKILLed, working again after (s): {recovered_s}")

        again = requests.get(f"{api_url}/v1/datasets/{dataset.json()['id']}", headers=headers, timeout=30)
        assert again.status_code == 200 and again.json()["rows"] == dataset.json()["rows"]  # kept by the AOF
        shown = json.loads(training(env, "status", "-o", "json").stdout)["services"]
        assert {row["name"]: (row["restarts"], row["lastExit"], row["running"]) for row in shown} == {
            "supervisor": (0, None, True), **{name: (1, -9, True) for name in answers}}
        log = state.log_path("supervisor").read_text()
        for name in answers:
            assert f"{name} was killed by SIGKILL; starting it again in 0.5s (restart 1)" in log
    finally:
        records = state.records()
        down = training(env, "down")
    assert down.returncode == 0 and down.stdout.startswith("stopped supervisor (pid"), down.stdout + down.stderr
    assert not any(process_alive(r.pid, r.command) for r in records)
    assert state.records() == [] and not redis_answers(info["redisUrl"])


def test_training_down_and_up_mid_run_gives_work_back_and_finishes_it(tmp_path, capsys):
    """Issue 26: `training down` while a run trains and an evaluation scores, then `training up`.
    Before, the tasks delivered again after the restart failed both (`a run cannot go from RUNNING
    to RUNNING`). Now the stopping worker gives both back (the run with a snapshot at its stop
    step), and the stack started again finishes them: the run with the metrics of every step once."""
    from shared import reasons
    from tests.e2e.test_worker_stop import EVALUATION_ROWS, LONG_PLAN, LONG_STEPS

    home = tmp_path / "home"
    env = home_env(home)
    port = free_port()
    api_url = f"http://127.0.0.1:{port}"
    upped = training(env, "up", "--detach", "--port", str(port))
    assert upped.returncode == 0, upped.stdout + upped.stderr
    state = StackState(home / "stack")
    headers = {"Authorization": f"Bearer {state.admin_token()}"}

    def get(path: str) -> dict:
        return requests.get(f"{api_url}{path}", headers=headers, timeout=30).json()

    def wait(what: str, check, timeout_s: float = 240):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = check()
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}\n"
                             + state.log_path("worker-local").read_text(errors="replace")[-4000:])

    try:
        dataset = requests.post(f"{api_url}/v1/datasets", headers=headers, timeout=30,
                                files={"file": ("sample.jsonl", SAMPLE.read_bytes())}).json()["id"]
        rows = "".join(json.dumps({"prompt": f"Say {i}:", "completion": str(i)}) + "\n"
                       for i in range(EVALUATION_ROWS))
        eval_data = requests.post(f"{api_url}/v1/datasets", headers=headers, timeout=30,
                                  files={"file": ("eval.jsonl", rows.encode())}).json()["id"]
        run_id = requests.post(f"{api_url}/v1/runs", headers=headers, timeout=30,
                               json={**LONG_PLAN, "dataset": dataset}).json()["id"]
        wait("step 6", lambda: (get(f"/v1/runs/{run_id}")["progress"]["step"] or 0) >= 6)
        evaluation_id = requests.post(f"{api_url}/v1/evaluations", headers=headers, timeout=30, json={
            "model": "builtin/tiny-qwen3", "dataset": eval_data, "maxTokens": 16}).json()["id"]
        wait("rows scored", lambda: (get(f"/v1/evaluations/{evaluation_id}")["progress"] or {}).get("rows", 0) > 0)
        assert get(f"/v1/runs/{run_id}")["status"] == "RUNNING"  # both in progress when the stop comes

        began = time.monotonic()
        down = training(env, "down")
        down_s = time.monotonic() - began
        assert down.returncode == 0, down.stdout + down.stderr
        assert "did not stop" not in state.log_path("supervisor").read_text()  # nothing needed SIGKILL
        began = time.monotonic()
        upped = training(env, "up", "--detach", "--port", str(port))
        assert upped.returncode == 0, upped.stdout + upped.stderr
        up_s = time.monotonic() - began

        run = wait("the run to end", lambda: (lambda r: r if r["status"] in ("SUCCEEDED", "FAILED", "CANCELLED")
                                              else None)(get(f"/v1/runs/{run_id}")))
        messages = [e["message"] for e in get(f"/v1/runs/{run_id}/events")["items"]]
        assert run["status"] == "SUCCEEDED", messages
        assert reasons.worker_stopped_requeued("local") in messages and run["attempts"] == 1, "\n".join(messages)
        points = [p for p in get(f"/v1/runs/{run_id}/metrics")["items"] if p.get("loss") is not None]
        assert [p["step"] for p in points] == list(range(1, LONG_STEPS + 1))
        stopped_at = next(p["step"] for p in points if p["attempt"] == 1) - 1
        assert f"restoring trainingState from step-{stopped_at:06d}" in messages  # its stop's snapshot
        evaluation = wait("the evaluation to end", lambda: (lambda e: e if e["status"] in (
            "SUCCEEDED", "FAILED", "CANCELLED") else None)(get(f"/v1/evaluations/{evaluation_id}")))
        assert evaluation["status"] == "SUCCEEDED" and evaluation["attempts"] == 1, evaluation
        with capsys.disabled():
            print(f"\n[faults] training down at step {stopped_at}: down took {down_s:.1f} s, up {up_s:.1f} s; "
                  f"run and evaluation SUCCEEDED")
    finally:
        records = state.records()
        down = training(env, "down")
    assert down.returncode == 0
    assert not any(process_alive(r.pid, r.command) for r in records)
