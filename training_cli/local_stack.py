"""`training up` / `training down`: the whole stack as local processes on the embedded default.

    supervisor python -m training_cli.supervisor STACK_DIR: starts the services below, and starts
               again any that dies (training_cli/supervisor.py)
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
from shared import reasons
from shared.config.deployment import load_config, training_home
from shared.errors import TrainerError
from shared.process.ports import free_port
from shared.process.private_files import private_dirs, use_private_umask
from training_cli import supervisor as supervision
from training_cli.errors import CliError
from training_cli.redis_server import RedisStartError, port_in_use, redis_answers, redis_command
from training_cli.settings import write_cli_config
from training_cli.stack_state import SUPERVISOR, ServiceRecord, StackState, stop_rank, tail

HEALTH_TIMEOUT_S = 60.0
STOP_GRACE_S = 10.0
# The supervisor stops the services, then Redis, each group within STOP_GRACE_S
SUPERVISOR_STOP_S = 2 * supervision.STOP_GRACE_S + 5


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
    """The local stack if its supervisor is alive and its API answers, else None. (A service the
    supervisor is starting again is its business, not a reason to start another stack.)"""
    state = state or StackState()
    info = state.info()
    watcher = next((r for r in state.records() if r.name == SUPERVISOR), None)
    if not info.get("apiUrl") or watcher is None or not watcher.alive():
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


def up(*, port: int, out: Console) -> tuple[StackInfo, subprocess.Popen | None]:
    """Start the stack (its supervisor, which starts the services) and wait until its API answers;
    returns its address and the supervisor's process (None when the stack was already up)."""
    use_private_umask()  # what this writes (the state folder, cli.yaml) and what it starts is this user's only
    state = StackState()
    existing = running_stack(state)
    if existing:
        return existing, None
    leftovers = [r for r in state.records() if r.alive()]
    if leftovers:
        names = ", ".join(f"{r.name} (pid {r.pid})" for r in leftovers)
        raise CliError(reasons.stack_leftovers(names))
    state.forget_dead()
    state.prepare()
    state.release_all()  # a new stack starts every service, whatever an earlier one held stopped
    if port_in_use("127.0.0.1", port):
        raise CliError(reasons.stack_port_taken(port))
    try:
        config = load_config()
    except TrainerError as exc:
        raise CliError(exc.message) from None
    nodes = [node.name for pool in config.pools.values() for node in pool.nodes]

    # With no Redis named (the embedded default), the stack starts one of its own on a free local
    # port rather than writing into whatever answers at 6379; a Redis it starts requires the
    # password kept beside the admin token, and the URL the services get carries it. The
    # supervisor starts it (first) and starts it again, same port and AOF, should it die.
    wanted = config.redis_url if config.redis_url_given else f"redis://127.0.0.1:{free_port()}/0"
    services: dict[str, list[str]] = {}
    redis_url = wanted
    if not redis_answers(wanted):
        try:
            redis_url, services[supervision.REDIS] = redis_command(wanted, state.redis_dir,
                                                                   password=state.redis_password())
        except RedisStartError as exc:
            raise CliError(str(exc)) from None
    token = state.admin_token()
    env = service_env(redis_url, token)
    api_url = api_url_for(port)
    if config.public_url is None:  # what GET /v1/info says the API's address is (never a Host header)
        env["TRAINING_PUBLIC_URL"] = api_url
    state.save_info({"apiUrl": api_url, "port": port, "redisUrl": redis_url})
    services.update(service_commands(port, nodes))
    private_dirs(env["TRAINING_ARTIFACT_ROOT"])  # older files inside are out of others' reach through it
    # Only the API checks tokens: the other services never see the admin token, nor does Redis
    # (whose password is in its 0600 config file) see any of the trainer's variables.
    supervision.write_plan(state, services, bare=(supervision.REDIS,),
                           withhold={name: list(ADMIN_ONLY) for name in services if name != "api"})
    watcher = spawn(state, SUPERVISOR, supervision.command(state), env)

    with out.status(f"waiting for the trainer API at {api_url} ..."):
        failed = wait_healthy(api_url, watcher, state, HEALTH_TIMEOUT_S)
    if failed:
        name, why = failed
        out.print(f"[red]error:[/] {name} {why}; last lines of {state.log_path(name)}:")
        for line in tail(state.log_path(name)):
            out.print(f"  {line}", markup=False, highlight=False)
        down(out=Console(quiet=True))
        raise CliError(reasons.stack_did_not_come_up(name, why))
    if supervision.REDIS in services:
        out.print(f"started Redis at {without_password(redis_url)} (data in {state.redis_dir}; its password is in "
                  f"{state.redis_password_path})")
    write_cli_config(api_url, token)
    return StackInfo(api_url, token, already_up=False), watcher


def without_password(url: str) -> str:
    """A Redis URL fit to print: its password, if any, as ***."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if not parts.password:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    netloc = f"{user}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


# What only the API needs of the stack's environment.
ADMIN_ONLY = ("TRAINING_ADMIN_TOKEN",)
# The CLI's own settings (training_cli/settings.py): no service reads them.
CLI_ONLY = ("TRAINING_TOKEN", "TRAINING_API_URL")


def service_env(redis_url: str, token: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in CLI_ONLY}
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


def wait_healthy(api_url: str, watcher: subprocess.Popen, state: StackState, timeout_s: float) -> tuple[str, str] | None:
    """None once /v1/health answers 200; else (service, what went wrong). A service that ends while
    the stack comes up fails `up` (with its log) instead of being restarted over and over: it is
    most likely a configuration it will never get past."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if watcher.poll() is not None:
            return SUPERVISOR, reasons.how_it_ended(watcher.returncode)
        for rec in state.records():
            if rec.last_exit is not None:
                return rec.name, reasons.how_it_ended(rec.last_exit)
        if health_ok(api_url, timeout_s=1.0):
            return None
        time.sleep(0.25)
    return "api", f"did not answer GET /v1/health within {timeout_s:g}s"


def foreground(watcher: subprocess.Popen, out: Console) -> int:
    """Stay up until Ctrl-C (then stop everything), printing what the supervisor logs (a service
    that died and was started again); if the supervisor itself ends, stop the rest."""
    state = StackState()
    # `kill PID` of the foreground `training up` stops the stack the same way Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    log = state.log_path(SUPERVISOR)
    seen = log.stat().st_size if log.exists() else 0
    try:
        while True:
            time.sleep(1.0)
            seen = _print_new_lines(log, seen, out)
            if watcher.poll() is not None:
                out.print(f"[red]the supervisor {reasons.how_it_ended(watcher.returncode)}[/]; "
                          "stopping the rest of the stack")
                down(out=out)
                return 1
    except KeyboardInterrupt:
        out.print("\nstopping the local stack ...")
        down(out=out)
        return 0


def _print_new_lines(log: Path, seen: int, out: Console) -> int:
    try:
        with log.open("rb") as f:
            f.seek(seen)
            new = f.read()
    except OSError:
        return seen
    complete = new[:new.rfind(b"\n") + 1]
    for line in complete.decode(errors="replace").splitlines():
        out.print(line, markup=False, highlight=False)
    return seen + len(complete)


def down(*, out: Console) -> list[ServiceRecord]:
    """Stop the supervisor (which stops its services, Redis last); then SIGTERM every recorded
    process group still alive (what a supervisor that died left behind), SIGKILL what is left after
    10 s, and forget them all."""
    state = StackState()
    alive = [r for r in state.records() if r.alive()]
    watcher = next((r for r in alive if r.name == SUPERVISOR), None)
    if watcher is not None:
        _signal_group(watcher.pid, signal.SIGTERM)
        deadline = time.monotonic() + SUPERVISOR_STOP_S
        while time.monotonic() < deadline and watcher.alive():
            time.sleep(0.2)
    leftovers = [r for r in state.records() if r.alive()]
    for rec in leftovers:
        _signal_group(rec.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    while time.monotonic() < deadline and any(r.alive() for r in leftovers):
        time.sleep(0.2)
    for rec in leftovers:
        if rec.alive():
            _signal_group(rec.pid, signal.SIGKILL)
            out.print(reasons.service_did_not_stop(rec.name, rec.pid, STOP_GRACE_S))
    alive += [r for r in leftovers if (r.name, r.pid) not in {(a.name, a.pid) for a in alive}]
    for rec in state.records():
        state.forget(rec.name)
    if alive:
        stopped = sorted(alive, key=lambda r: stop_rank(r.name))
        out.print("stopped " + ", ".join(f"{r.name} (pid {r.pid})" for r in stopped))
    else:
        out.print("no local stack is running")
    return alive


# `training stop` waits this long for the supervisor to stop a service (its SIGTERM grace and more);
# `training start` for it to start one.
SERVICE_STOP_WAIT_S = supervision.STOP_GRACE_S + 5
SERVICE_START_WAIT_S = 10.0


def _stack_services(state: StackState, name: str) -> ServiceRecord | None:
    """The record of service `name` of the running local stack; CliError when no stack runs or it
    has no such service."""
    watcher = next((r for r in state.records() if r.name == SUPERVISOR), None)
    if watcher is None or not watcher.alive():
        raise CliError(reasons.STACK_NOT_RUNNING)
    names = [service.name for service in supervision.load(state)]
    if name not in names:
        raise CliError(reasons.no_such_service(name, names))
    return next((r for r in state.records() if r.name == name), None)


def stop_service(name: str, *, out: Console) -> None:
    """`training stop NAME`: the supervisor stops one service of the local stack and leaves it
    stopped (training_cli/supervisor.py); returns once it has stopped."""
    state = StackState()
    record = _stack_services(state, name)
    if name in state.held() and (record is None or not record.alive()):
        out.print(reasons.service_already(name, "stopped"))
        return
    state.hold(name)
    deadline = time.monotonic() + SERVICE_STOP_WAIT_S
    while time.monotonic() < deadline:
        record = next((r for r in state.records() if r.name == name), None)
        if record is None or (record.held and not record.alive()):
            out.print(reasons.service_stopped_by_request(name, record.pid if record else None))
            return
        time.sleep(0.1)
    raise CliError(reasons.service_did_not_stop_in_time(name, SERVICE_STOP_WAIT_S, str(state.log_path(SUPERVISOR))))


def start_service(name: str, *, out: Console) -> None:
    """`training start NAME`: the supervisor starts again a service `training stop` held stopped;
    returns once it runs."""
    state = StackState()
    record = _stack_services(state, name)
    if name not in state.held():
        out.print(reasons.service_already(name, "running" if record and record.alive() else "starting"))
        return
    before = record.pid if record else None
    state.release(name)
    deadline = time.monotonic() + SERVICE_START_WAIT_S
    while time.monotonic() < deadline:
        record = next((r for r in state.records() if r.name == name), None)
        if record is not None and record.pid != before and record.alive():
            out.print(reasons.service_started_by_request(name, record.pid))
            return
        time.sleep(0.1)
    raise CliError(reasons.service_did_not_start_in_time(name, SERVICE_START_WAIT_S, str(state.log_path(name))))


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)  # the service and any children it forked (Celery pool, engines)
    except ProcessLookupError:
        pass
    except PermissionError:
        pass  # not ours any more
