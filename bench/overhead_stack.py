"""The trainer's side of bench/platform_overhead.py: the local stack as `training up` brings it up
(training_cli.local_stack.up: supervisor, its own Redis, API, scheduler, one Celery worker and
endpoint manager per node), under a home directory of its own, with the benchmark's model in its
catalog through a `path:` entry; runs submitted over the REST API and read back (metrics, events,
and the claim's timestamps from the stack's Redis); `down` at the end.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import requests
import yaml

TERMINAL = ("SUCCEEDED", "FAILED", "CANCELLED")
MODEL_ID = "bench/qwen3"
# How often a run is polled until it ends: seldom, so that the API's answers take little of the
# cores the run trains on (the figures come from the run's own stamps, not from polling).
POLL_S = 2.0


class LocalStack:
    def __init__(self, api_url: str, token: str, redis_url: str, node_slots: int):
        self.api_url, self.token, self.redis_url, self.node_slots = api_url, token, redis_url, node_slots

    def _call(self, method: str, path: str, **kw) -> Any:
        resp = requests.request(method, self.api_url + path, headers={"Authorization": f"Bearer {self.token}"},
                                timeout=60, **kw)
        if resp.status_code >= 400:
            raise RuntimeError(f"{method} {path}: {resp.status_code} {resp.text}")
        return resp.json()

    def upload(self, path: Path) -> str:
        return self._call("POST", "/v1/datasets", files={"file": (path.name, path.read_bytes())})["id"]

    def submit(self, plan: dict[str, Any]) -> tuple[str, float]:
        """The run's id and the wall time (time.time()) just before it was submitted."""
        submitted_at = time.time()
        return self._call("POST", "/v1/runs", json=plan)["id"], submitted_at

    def wait(self, run_id: str, timeout_s: float = 1800) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            doc = self._call("GET", f"/v1/runs/{run_id}")
            if doc["status"] in TERMINAL:
                return doc
            time.sleep(POLL_S)
        raise TimeoutError(f"run {run_id} did not end within {timeout_s:g} s")

    def metrics(self, run_id: str) -> list[dict[str, Any]]:
        return self._call("GET", f"/v1/runs/{run_id}/metrics")["items"]

    def events(self, run_id: str) -> list[dict[str, Any]]:
        return self._call("GET", f"/v1/runs/{run_id}/events")["items"]

    def wait_for_worker(self, timeout_s: float = 120) -> None:
        """Until the node's worker keeps its heartbeat (`up` waits for the API only)."""
        from shared.store.documents import connect
        from shared.store.keys import Keys

        client, key = connect(self.redis_url), Keys("trainer:").node_alive("local")
        deadline = time.monotonic() + timeout_s
        while not client.exists(key):
            if time.monotonic() > deadline:
                raise TimeoutError("the local stack's worker did not start")
            time.sleep(0.2)

    def service_cpu_seconds(self) -> float:
        """CPU seconds the stack's services have used so far (supervisor, Redis, API, scheduler, the
        worker's main process, the endpoint manager), from /proc: the cores they take from training,
        without the worker's task children, where training itself runs."""
        from training_cli.stack_state import StackState

        tick = os.sysconf("SC_CLK_TCK")
        total = 0.0
        for record in StackState().records():
            try:
                fields = Path(f"/proc/{record.pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        return total

    def claim(self, claim_id: str) -> dict[str, Any]:
        """The claim as the scheduler stamped it (submittedAt, grantedAt, dispatchedAt): the API
        shows no claim, so it is read from the stack's own Redis."""
        from shared.claims.queue import ClaimQueue
        from shared.store.documents import connect
        from shared.store.keys import Keys

        return ClaimQueue(connect(self.redis_url), Keys("trainer:")).get(claim_id) or {}


def write_config(home: Path, *, model_dir: Path, parameters: int, node_slots: int) -> Path:
    path = home / "deployment.yaml"
    path.write_text(yaml.safe_dump({
        "defaultPool": "default",
        "pools": {"default": {"nodes": [{"name": "local", "devices": {"kind": "cpu", "count": node_slots}}]}},
        "catalog": [{"id": MODEL_ID, "path": str(model_dir), "parameters": parameters, "precisions": ["fp32"],
                     "gpuCounts": list(range(1, node_slots + 1))}],
    }))
    return path


@contextmanager
def local_stack(home: Path, *, model_dir: Path, parameters: int, node_slots: int = 2) -> Iterator[LocalStack]:
    """The local stack of `training up` under `home` (its own port, Redis and artifacts), down on exit."""
    from rich.console import Console

    from shared.process.ports import free_port
    from training_cli import local_stack as stack
    from training_cli.stack_state import StackState

    home.mkdir(parents=True, exist_ok=True)
    saved = dict(os.environ)
    for var in ("TRAINING_REDIS_URL", "TRAINING_KEY_PREFIX", "TRAINING_ARTIFACT_ROOT", "TRAINING_ADMIN_TOKEN"):
        os.environ.pop(var, None)
    os.environ.update(TRAINING_HOME=str(home),
                      TRAINING_CONFIG=str(write_config(home, model_dir=model_dir, parameters=parameters,
                                                       node_slots=node_slots)))
    quiet = Console(quiet=True)
    try:
        info, _ = stack.up(port=free_port(), out=quiet)
        redis_url = StackState().info()["redisUrl"]
        yield LocalStack(info.api_url, info.token, redis_url, node_slots)
    finally:
        try:
            stack.down(out=quiet)
        finally:
            os.environ.clear()
            os.environ.update(saved)
