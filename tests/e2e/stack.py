"""The real services as processes, for end-to-end tests: API (uvicorn), scheduler and one Celery
trainer worker per node, all on a real Redis under a key prefix of their own."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis
import requests
import yaml

from shared.process.ports import free_port

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Stack:
    api_url: str
    token: str
    env: dict[str, str]
    home: Path
    artifacts: Path
    redis_url: str
    prefix: str
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    logs: dict[str, Path] = field(default_factory=dict)

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def get(self, path: str, **kw) -> requests.Response:
        return requests.get(self.api_url + path, headers=self.headers(), timeout=30, **kw)

    def post(self, path: str, **kw) -> requests.Response:
        return requests.post(self.api_url + path, headers=self.headers(), timeout=30, **kw)

    def serving_key(self, endpoint_id: str) -> dict[str, str]:
        """The header a request straight to an endpoint's serving process needs: its secret, read
        from the store as the trainer's proxy reads it (the API never shows it)."""
        from shared.store.documents import Store, connect
        from shared.store.keys import Keys

        doc = Store(connect(self.redis_url), Keys(self.prefix)).get(endpoint_id) or {}
        return {"Authorization": f"Bearer {(doc.get('process') or {}).get('apiKey')}"}

    def log_tail(self, name: str, lines: int = 40) -> str:
        return "\n".join(self.logs[name].read_text(errors="replace").splitlines()[-lines:])

    def start(self, name: str, args: list[str]) -> subprocess.Popen:
        log = self.home / f"{name}.log"
        self.logs[name] = log
        proc = subprocess.Popen([sys.executable, "-m", *args], cwd=REPO, env=self.env,
                                stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True)
        self.processes[name] = proc
        return proc

    def start_worker(self) -> subprocess.Popen:
        return self.start("worker", ["services.trainer_worker.worker", "--node", "local"])

    def wait_until_worker_alive(self) -> None:
        from shared.store.keys import Keys

        client, key = redis.Redis.from_url(self.redis_url), Keys(self.prefix).node_alive("local")
        self.wait_until("the worker's heartbeat", lambda: client.exists(key)
                        or self.processes["worker"].poll() is not None, timeout_s=60)
        assert self.processes["worker"].poll() is None, self.log_tail("worker")

    def stop(self, name: str, sig: int = signal.SIGTERM, timeout_s: float = 20) -> None:
        proc = self.processes.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        except ProcessLookupError:
            pass

    def wait_until(self, what: str, check, timeout_s: float = 120, every_s: float = 0.3):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = check()
            if value:
                return value
            time.sleep(every_s)
        tails = "\n".join(f"--- {n}\n{self.log_tail(n)}" for n in self.logs)
        raise AssertionError(f"timed out waiting for {what}\n{tails}")


def start_stack(tmp: Path, redis_url: str, *, nodes: int = 2, extra_env: dict[str, str] | None = None,
                endpoint_manager: bool = False, extra_tokens: tuple[dict, ...] = (),
                extra_models: tuple[dict, ...] = (), extra_config: dict | None = None) -> Stack:
    prefix = f"e2e-{secrets.token_hex(4)}:"
    token = secrets.token_hex(16)
    home, artifacts = tmp / "home", tmp / "artifacts"
    home.mkdir(parents=True, exist_ok=True)
    config_path = home / "deployment.yaml"
    config_path.write_text(yaml.safe_dump({
        "redisUrl": redis_url, "keyPrefix": prefix, "artifactRoot": str(artifacts), "defaultPool": "default",
        "pools": {"default": {"nodes": [{"name": "local", "devices": {"kind": "cpu", "count": nodes}}]}},
        "catalog": [{"id": "builtin/tiny-qwen3", "builtin": "tiny-qwen3"}, *extra_models],
        "tokens": [{"token": token, "name": "admin", "admin": True}, *extra_tokens],
        # `snapshots import --on-server` of directories a test writes under its temporary directories
        "snapshotImportRoots": [tempfile.gettempdir()],
        **(extra_config or {}),
    }))
    port = free_port()
    env = {**os.environ, "TRAINING_CONFIG": str(config_path), "TRAINING_HOME": str(home),
           "TRAINING_API_URL": f"http://127.0.0.1:{port}", "TRAINING_TOKEN": token, "PYTHONUNBUFFERED": "1"}
    env.update(extra_env or {})
    for var in ("TRAINING_REDIS_URL", "TRAINING_KEY_PREFIX", "TRAINING_ARTIFACT_ROOT", "TRAINING_ADMIN_TOKEN"):
        env.pop(var, None)
    stack = Stack(f"http://127.0.0.1:{port}", token, env, home, artifacts, redis_url, prefix)
    stack.start("api", ["services.api.main", "--port", str(port)])
    stack.start("scheduler", ["services.scheduler.main"])
    stack.start_worker()
    if endpoint_manager:
        stack.start("endpoint-manager", ["services.endpoint_manager.main", "--node", "local", "--stop-serving-on-exit"])

    def healthy():
        try:
            return requests.get(stack.api_url + "/v1/health", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    stack.wait_until("the API to answer", healthy, timeout_s=60)
    stack.wait_until_worker_alive()
    return stack


def stop_stack(stack: Stack) -> None:
    for name in list(stack.processes):
        stack.stop(name)
    client = redis.Redis.from_url(stack.redis_url)
    keys = list(client.scan_iter(match=f"{stack.prefix}*", count=1000))
    if keys:
        client.delete(*keys)


# The settings a caller's environment may hold that would point the CLI at another stack.
CALLERS_STACK = ("TRAINING_API_URL", "TRAINING_TOKEN", "TRAINING_CONFIG", "TRAINING_REDIS_URL",
                 "TRAINING_ARTIFACT_ROOT", "TRAINING_ADMIN_TOKEN", "TRAINING_KEY_PREFIX")


def home_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of `training up` and the CLI for a local stack in `home` alone: none of the
    caller's stack settings, this repository's code."""
    env = {name: value for name, value in os.environ.items() if name not in CALLERS_STACK}
    return {**env, "TRAINING_HOME": str(home), "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1", **extra}


def training(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """The `training` CLI of this repository, run as a user would."""
    return subprocess.run([sys.executable, "-m", "training_cli.main", *args], cwd=REPO, env=env, text=True,
                          capture_output=True, timeout=180)
