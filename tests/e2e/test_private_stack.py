"""Secrets on disk and in children (issue 26, item 3), on the real local stack (`training up`):

- every file and folder the stack wrote under TRAINING_HOME (its state, logs, Redis's AOF, cli.yaml,
  the artifacts: a dataset, a run's snapshots, TensorBoard events, the ranks' job file, an
  endpoint's load spec and log) is its user's only: no bit for the group or others;
- the environment of a real training child (a rank of a two-slot run) and of a real serving
  process, read from /proc/PID/environ, holds neither the admin token nor the Redis URL nor its
  password; the worker (and so its Celery children) has no admin token either."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import redis
import requests

from shared.process.ports import free_port
from shared.store.documents import Store
from shared.store.keys import Keys
from tests.e2e.stack import REPO, home_env, training
from training_cli.stack_state import StackState

SAMPLE = REPO / "shared" / "data" / "sample_sft.jsonl"


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.decode(errors="replace").partition("=")[::2] for item in raw.split(b"\0") if item)


def pids_running(marker: bytes) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def wait_until(what: str, check, timeout_s: float = 300.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def open_to_others(root: Path) -> list[str]:
    """Every file or folder under root (root too) with a bit for the group or others."""
    found = []
    for folder, dirs, files in os.walk(root):
        for path in [Path(folder)] + [Path(folder) / name for name in files]:
            mode = path.lstat().st_mode
            if not stat.S_ISLNK(mode) and mode & 0o077:
                found.append(f"{path.relative_to(root)} {oct(mode & 0o777)}")
    return found


def test_what_the_stack_writes_and_what_its_children_see_are_its_own(tmp_path):
    home = tmp_path / "home"
    env = home_env(home)
    port = free_port()
    api = f"http://127.0.0.1:{port}"
    upped = training(env, "up", "--detach", "--port", str(port))
    assert upped.returncode == 0, upped.stdout + upped.stderr
    try:
        state = StackState(home / "stack")
        token, password = state.admin_token(), state.redis_password()
        redis_url = state.info()["redisUrl"]
        headers = {"Authorization": f"Bearer {token}"}
        secrets_ = {"admin token": token, "Redis password": password}

        def assert_holds_no_secret(environ: dict[str, str], who: str) -> None:
            assert "TRAINING_ADMIN_TOKEN" not in environ and "TRAINING_REDIS_URL" not in environ, (who, environ)
            for what, value in secrets_.items():
                assert not any(value in v for v in environ.values()), f"{who} sees the {what}"

        with SAMPLE.open("rb") as data:
            dataset = requests.post(f"{api}/v1/datasets", headers=headers, files={"file": ("sample.jsonl", data)},
                                    timeout=60).json()["id"]
        plan = {"model": "builtin/tiny-qwen3", "dataset": dataset, "execution": {"gpus": 2},
                "hyperparameters": {"maxSteps": 5000, "batchSize": 8}, "snapshots": {"everySteps": 2}}
        resp = requests.post(f"{api}/v1/runs", headers=headers, json=plan, timeout=60)
        assert resp.status_code == 201, resp.text
        run_id = resp.json()["id"]

        def run() -> dict:
            return requests.get(f"{api}/v1/runs/{run_id}", headers=headers, timeout=30).json()

        wait_until("a snapshot of the two-slot run", lambda: run().get("latestSnapshot"))
        ranks = pids_running(b"services.trainer_worker.engines.distributed")
        assert len(ranks) == 2, ranks
        for pid in ranks:
            environ = environ_of(pid)
            assert environ["WORLD_SIZE"] == "2" and environ["PATH"], environ
            assert_holds_no_secret(environ, f"rank pid {pid}")
        workers = pids_running(b"services.trainer_worker.worker")  # the worker and its Celery children
        assert workers and all("TRAINING_ADMIN_TOKEN" not in environ_of(pid) for pid in workers)
        assert all(token not in value for pid in workers for value in environ_of(pid).values())
        requests.delete(f"{api}/v1/runs/{run_id}", headers=headers, timeout=30)
        wait_until("the run to end", lambda: run()["status"] in ("CANCELLED", "SUCCEEDED", "FAILED"))

        endpoint = requests.post(f"{api}/v1/endpoints", headers=headers, json={"model": "builtin/tiny-qwen3"},
                                 timeout=60).json()["id"]
        wait_until("the endpoint to be READY", lambda: requests.get(
            f"{api}/v1/endpoints/{endpoint}", headers=headers, timeout=30).json()["phase"] == "READY")
        process = Store(redis.Redis.from_url(redis_url, decode_responses=True), Keys("trainer:")).get(endpoint)["process"]
        serving = environ_of(process["pid"])
        assert serving["TRAINING_SERVING_API_KEY"] == process["apiKey"]  # its own secret, and no other
        assert_holds_no_secret(serving, "the serving process")

        artifacts = home / "artifacts"
        snapshots = list(artifacts.glob(f"runs/{run_id}/snapshots/step-*/adapter/*"))
        assert snapshots and list(artifacts.glob("datasets/**/*.jsonl"))
        assert list((state.redis_dir).rglob("*.aof")) and list(artifacts.glob(f"runs/{run_id}/**/job.pkl"))
        assert list(artifacts.glob(f"endpoints/{endpoint}/server.log"))
        assert open_to_others(home) == []
    finally:
        down = training(env, "down")
    assert down.returncode == 0, down.stdout + down.stderr
