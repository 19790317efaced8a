"""`training up` / `training down`: the whole stack as local processes on the embedded default.

    redis      its own, password-protected (unless TRAINING_REDIS_URL or the config names one that answers)
    api        python -m services.api.main --host 127.0.0.1 --port PORT
    scheduler  python -m services.scheduler.main
    worker-N   python -m services.trainer_worker.worker --node N   (one per node of the config)
    endpoint-manager-N  python -m services.endpoint_manager.main --node N --stop-serving-on-exit

Each runs in a session of its own (so `down` can stop its whole process group) with its output in
$TRAINING_HOME/stack/logs/NAME.log.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import requests
from rich.console import Console

import shared
from shared.config import load_config, training_home
from shared.errors import TrainerError
from shared.redis_server import RedisStartError, ensure_redis, free_port, port_in_use
from training_cli.errors import CliError
from training_cli.settings import write_cli_config
from training_cli.stack_state import ServiceRecord, StackState, tail

HEALTH_TIMEOUT_S = 60.0
STOP_GRACE_S = 10.0


@dataclass(frozen=True)
class StackInfo:
    api_url: str
    token: str
    already_up: bool


def api_url_for(port: int) -> str:
    return f"http://127.0.0.1:{port}"


def health_ok(api_url: str, timeout_s: float = 2.0) -> bool:
    try:
        return requests.get(f"{api_url}/v1/health", timeout=timeout_s).status_code == 200
    except requests.RequestException:
        return False


def running_stack(state: StackState | None = None) -> StackInfo | None:
    """The local stack if its processes are alive and its API answers, else None."""
    state = state or StackState()
    info = state.info()
    records = state.records()
    if not info.get("apiUrl") or not records or not all(r.alive() for r in records):
        return None
    if not health_ok(info["apiUrl"]):
        return None
    return StackInfo(info["apiUrl"], state.admin_token(), already_up=True)


def service_commands(port: int, nodes: list[str]) -> dict[str, list[str]]:
    python = sys.executable
    commands = {
        "api": [python, "-m", "services.api.main", "--host", "127.0.0.1", "--port", str(port)],
        "scheduler": [python, "-m", "services.scheduler.main"],
    }
    for node in nodes:
        commands[f"worker-{node}"] = [python, "-m", "services.trainer_worker.worker", "--node", node]
        # `training down` stops the manager; its serving processes (sessions of their own) stop with it.
        commands[f"endpoint-manager-{node}"] = [python, "-m", "services.endpoint_manager.main", "--node", node,
                                                "--stop-serving-on-exit"]
    return commands


def up(*, port: int, out: Console) -> tuple[StackInfo, dict[str, subprocess.Popen]]:
    """Start the stack and wait until its API answers; returns its address and the processes."""
    state = StackState()
    existing = running_stack(state)
    if existing:
        return existing, {}
    leftovers = [r for r in state.records() if r.alive()]
    if leftovers:
        names = ", ".join(f"{r.name} (pid {r.pid})" for r in leftovers)
        raise CliError(f"part of an earlier local stack still runs but does not answer: {names}. Run: training down")
    state.forget_dead()
    state.prepare()
    if port_in_use("127.0.0.1", port):
        raise CliError(f"port {port} is taken by another program; pick another with: training up --port N")
    try:
        config = load_config()
    except TrainerError as exc:
        raise CliError(exc.message) from None
    nodes = [node.name for pool in config.pools.values() for node in pool.nodes]

    processes: dict[str, subprocess.Popen] = {}
    # With no Redis named (the embedded default), the stack starts one of its own on a free local
    # port rather than writing into whatever answers at 6379; a Redis it starts requires the
    # password kept beside the admin token, and the URL the services get carries it.
    wanted = config.redis_url if config.redis_url_given else f"redis://127.0.0.1:{free_port()}/0"
    try:
        redis_url, redis_process = ensure_redis(wanted, state.redis_dir, password=state.redis_password())
    except RedisStartError as exc:
        raise CliError(str(exc)) from None
    if redis_process is not None:
        state.record("redis", redis_process.pid, list(redis_process.args))
        processes["redis"] = redis_process
        out.print(f"started Redis at {redis_url} (data in {state.redis_dir})")
    token = state.admin_token()
    env = service_env(redis_url, token)
    api_url = api_url_for(port)
    state.save_info({"apiUrl": api_url, "port": port, "redisUrl": redis_url})
    for name, command in service_commands(port, nodes).items():
        processes[name] = spawn(state, name, command, env)

    with out.status(f"waiting for the trainer API at {api_url} ..."):
        failed = wait_healthy(api_url, processes, HEALTH_TIMEOUT_S)
    if failed:
        name, why = failed
        out.print(f"[red]error:[/] {name} {why}; last lines of {state.log_path(name)}:")
        for line in tail(state.log_path(name)):
            out.print(f"  {line}", markup=False, highlight=False)
        down(out=Console(quiet=True))
        raise CliError(f"the local stack did not come up ({name} {why})")
    write_cli_config(api_url, token)
    return StackInfo(api_url, token, already_up=False), processes


def service_env(redis_url: str, token: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        TRAINING_REDIS_URL=redis_url,
        TRAINING_ADMIN_TOKEN=token,
        TRAINING_ARTIFACT_ROOT=os.environ.get("TRAINING_ARTIFACT_ROOT") or str(training_home() / "artifacts"),
        PYTHONUNBUFFERED="1",
    )
    # The services import `services` and `shared` from the same tree as this CLI.
    root = str(Path(shared.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env  # TRAINING_CONFIG, if set, passes through with the rest of the environment


def spawn(state: StackState, name: str, command: list[str], env: dict[str, str]) -> subprocess.Popen:
    with open(state.log_path(name), "ab") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            cwd=state.root, start_new_session=True,
        )
    state.record(name, process.pid, command)
    return process


def wait_healthy(
    api_url: str, processes: dict[str, subprocess.Popen], timeout_s: float
) -> tuple[str, str] | None:
    """None once /v1/health answers 200; else (service, what went wrong)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for name, process in processes.items():
            if process.poll() is not None:
                return name, f"exited with code {process.returncode}"
        if health_ok(api_url, timeout_s=1.0):
            return None
        time.sleep(0.25)
    return "api", f"did not answer GET /v1/health within {timeout_s:g}s"


def foreground(processes: dict[str, subprocess.Popen], out: Console) -> int:
    """Stay up until Ctrl-C (then stop everything) or until a service exits (then stop the rest)."""
    state = StackState()
    # `kill PID` of the foreground `training up` stops the stack the same way Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        while True:
            time.sleep(1.0)
            for name, process in processes.items():
                if process.poll() is not None:
                    out.print(f"[red]{name} exited with code {process.returncode}[/]; last lines of its log:")
                    for line in tail(state.log_path(name)):
                        out.print(f"  {line}", markup=False, highlight=False)
                    down(out=out)
                    return 1
    except KeyboardInterrupt:
        out.print("\nstopping the local stack ...")
        down(out=out)
        return 0


def down(*, out: Console) -> list[ServiceRecord]:
    """SIGTERM every recorded process group, SIGKILL what is left after 10 s, forget them all."""
    state = StackState()
    records = state.records()
    alive = [r for r in records if r.alive()]
    for rec in alive:
        _signal_group(rec.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    while time.monotonic() < deadline and any(r.alive() for r in alive):
        time.sleep(0.2)
    for rec in alive:
        if rec.alive():
            _signal_group(rec.pid, signal.SIGKILL)
            out.print(f"{rec.name} (pid {rec.pid}) did not stop within {STOP_GRACE_S:g}s; killed it")
    for rec in records:
        state.forget(rec.name)
    if alive:
        out.print("stopped " + ", ".join(f"{r.name} (pid {r.pid})" for r in alive))
    else:
        out.print("no local stack is running")
    return alive


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)  # the service and any children it forked (Celery pool, engines)
    except ProcessLookupError:
        pass
    except PermissionError:
        pass  # not ours any more
