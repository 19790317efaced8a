"""Serving processes on this node: write the load spec, start, probe, stop.

Every endpoint has a folder `ARTIFACT_ROOT/endpoints/ID/` with its `load_spec.json` and the
server's output in `server.log`. A process runs in a session of its own, so it outlives a restart
of the manager (which adopts it again) and stopping it stops its whole process group.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from shared.process.child_env import child_env
from shared.process.ports import free_port
from shared.store.artifacts import ArtifactRoot, endpoint_key, join
from shared.store.times import now_iso

REPO = Path(__file__).resolve().parents[2]
PROBE_TIMEOUT_S = 1.0
STOP_GRACE_S = 5.0  # SIGTERM, then SIGKILL after this long
SPEC_FILE, LOG_FILE = "load_spec.json", "server.log"


def endpoint_dir(artifacts: ArtifactRoot, endpoint_id: str) -> Path:
    """The endpoint's working directory on this node (its load spec, its serving log)."""
    return artifacts.scratch(endpoint_key(endpoint_id))


def device_kind(devices: list[str]) -> str:
    """"cuda" when the granted devices are GPUs (`cuda:I`), else "cpu" (CPU slots)."""
    return "cuda" if any(str(d).startswith("cuda") for d in devices) else "cpu"


@dataclass
class Started:
    popen: subprocess.Popen
    process: dict[str, Any]  # what the endpoint document records: pid, port, startedAt, backend, log


def start(*, spec: Any, devices: list[str], endpoint_id: str, artifacts: ArtifactRoot,
          host: str = "127.0.0.1", cpu_threads: int | None = None) -> Started:
    """Write the load spec and start the serving process on a free port of `host` (the interface it
    listens on), with a secret of its own that every request but its /health probe must carry
    (recorded as `process.apiKey`: the API's proxy sends it, nothing else is given it). Raises if
    it cannot. `cpu_threads`: on CPU slots, the grant's share of the node's cores."""
    from shared.serving.backends import choose_backend

    folder = endpoint_dir(artifacts, endpoint_id)
    spec_path = spec.write(folder / SPEC_FILE)
    backend = choose_backend(devices, cpu_threads=cpu_threads)
    port = free_port("127.0.0.1" if host in ("0.0.0.0", "::") else host)
    api_key = secrets.token_urlsafe(32)
    argv, env = backend.command(spec, port=port, spec_path=spec_path, host=host, endpoint_id=endpoint_id,
                                api_key=api_key)
    log_path = folder / LOG_FILE
    with log_path.open("ab") as log:
        log.write(f"--- {now_iso()} starting: {' '.join(map(str, argv))}\n".encode())
        log.flush()
        popen = subprocess.Popen(
            # only the allow-listed environment: never the manager's Redis URL (its password) or tokens
            [str(a) for a in argv], cwd=REPO, env=child_env(env), stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    name = getattr(backend, "name", None) or type(backend).__name__
    return Started(popen, {
        "pid": popen.pid, "port": port, "startedAt": now_iso(), "backend": name, "apiKey": api_key,
        "log": join(endpoint_key(endpoint_id), LOG_FILE), "startTicks": start_ticks(popen.pid),
    })


def pid_alive(pid: int | None) -> bool:
    """True when `pid` runs (a zombie does not count)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True  # no /proc here: trust kill(0)


def start_ticks(pid: int) -> int | None:
    """When the process started, in clock ticks since boot (/proc/PID/stat field 22); None without /proc."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def is_recorded_process(process: dict[str, Any] | None) -> bool:
    """True when the process an endpoint records still runs: its pid is alive and started when the
    recorded one did (so a reused pid does not count). Without /proc, the pid alone decides."""
    if not process or not pid_alive(process.get("pid")):
        return False
    recorded, now = process.get("startTicks"), start_ticks(process["pid"])
    return recorded is None or now is None or recorded == now


def health_ok(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    try:
        return requests.get(f"{address}/health", timeout=timeout_s).status_code == 200
    except requests.RequestException:
        return False


def stop(pid: int | None, *, popen: subprocess.Popen | None = None, grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM to the process group, then SIGKILL if it is still there after `grace_s`."""
    if not pid:
        return
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            break
        except PermissionError:
            os.kill(pid, sig)
        if _wait_gone(pid, popen, wait_s):
            break
    if popen is not None:
        try:
            popen.wait(timeout=1)
        except subprocess.TimeoutExpired:
            pass


def _wait_gone(pid: int, popen: subprocess.Popen | None, wait_s: float) -> bool:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if popen is not None and popen.poll() is not None:
            return True
        if popen is None and not pid_alive(pid):
            return True
        time.sleep(0.05)
    return False

