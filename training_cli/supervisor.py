"""The local stack's supervisor: `python -m training_cli.supervisor STACK_DIR`, started by
`training up` (training_cli/local_stack.py), which writes what to run in STACK_DIR/plan.json.

It starts each service of the stack in a session of its own (its own Redis first, when the stack
has one, and waits until it answers), and starts again any service that exits, whatever its code:
after `FIRST_DELAY_S`, doubling each time up to `MAX_DELAY_S`, back to `FIRST_DELAY_S` once a
service has run for `STABLE_AFTER_S`. Before a restart, whatever the dead service left in its
process group (a Celery pool child, a training process) is killed, so two generations never hold
the same devices. Redis comes back on the same port with the same AOF, and the services reconnect
to it by themselves (shared/store/documents.py). Each exit and start is a line of its log
(logs/supervisor.log); each service's pid record (pids/NAME.json) carries its restarts and how it
last ended, which `training status` shows.

SIGTERM or SIGINT (`training down` sends SIGTERM) stops every service (SIGTERM to its process group,
SIGKILL after `STOP_GRACE_S`), Redis last so the others' last writes land, and then the supervisor.

`training stop NAME` holds one service stopped (a file `held/NAME` in STACK_DIR, looked at every
poll): the supervisor stops it as it stops every service (SIGTERM to its group, SIGKILL after
`STOP_GRACE_S`) and does not start it again until `training start NAME` removes the file; then it
starts it at once. A held service's record says so (`held`), and its stop is no restart.

It restarts what dies, not what hangs: a service that stays alive without doing its work is left to
the checks of its own (the endpoint manager's probes, the node heartbeat). Serving processes are
not its children: they run in sessions of their own under the endpoint manager, which adopts them
when it is started again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from shared import reasons
from shared.process.child_env import child_env
from shared.process.private_files import use_private_umask
from training_cli.redis_server import redis_answers
from training_cli.stack_state import StackState

FIRST_DELAY_S = 0.5
# Low enough that a service killed again and again (the out-of-memory killer, an operator) is never
# away for long, high enough that one that cannot start costs little (issue 26: it was 30 s).
MAX_DELAY_S = 5.0
# Up this long, a service's next exit is a new failure: its wait starts over at FIRST_DELAY_S.
STABLE_AFTER_S = 30.0
POLL_S = 0.2
STOP_GRACE_S = 10.0
REDIS_WAIT_S = 15.0
PLAN = "plan.json"
REDIS = "redis"


@dataclass
class Service:
    name: str
    command: list[str]
    # the variables of the supervisor's environment this service does not get (its secrets it does
    # not need); `bare`: it gets only the allow-list of shared/process/child_env.py (Redis: no trainer variable)
    withhold: tuple[str, ...] = ()
    bare: bool = False
    process: subprocess.Popen | None = None
    started_at: float = 0.0  # monotonic
    restarts: int = 0
    last_exit: int | None = None
    delay_s: float = FIRST_DELAY_S
    start_at: float = 0.0  # monotonic: when it may be started (again)
    stopping_since: float = 0.0  # monotonic: when `training stop` had it sent SIGTERM (0: not stopping)
    held: bool = False  # stopped by `training stop`, recorded so


def write_plan(state: StackState, services: dict[str, list[str]], *,
               withhold: dict[str, list[str]] | None = None, bare: tuple[str, ...] = ()) -> Path:
    """What the supervisor runs, in start order (Redis first when the stack has its own):
    `withhold` names, per service, the variables it must not inherit; `bare` the services that get
    only the allow-listed environment."""
    withhold = withhold or {}
    path = state.root / PLAN
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump({"services": [{"name": name, "command": command, "withhold": list(withhold.get(name, ())),
                                 "bare": name in bare} for name, command in services.items()]}, out)
    return path


def command(state: StackState) -> list[str]:
    """How `training up` starts the supervisor."""
    return [sys.executable, "-m", "training_cli.supervisor", str(state.root)]


class Supervisor:
    def __init__(self, state: StackState, services: list[Service], *, env: dict[str, str] | None = None):
        self.state, self.services, self.env = state, services, env

    def log(self, line: str) -> None:
        print(f"{datetime.now().isoformat(timespec='seconds')} {line}", flush=True)

    # --- one service
    def start(self, service: Service) -> None:
        try:
            with open(self.state.log_path(service.name), "ab") as log:
                service.process = subprocess.Popen(
                    service.command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    env=self.env_of(service), cwd=self.state.root, start_new_session=True)
        except OSError as exc:  # its program is gone: keep trying, as for a service that exits
            service.process = None
            delay_s = self._next_delay(service)
            service.start_at = time.monotonic() + delay_s
            self.log(reasons.service_could_not_start(service.name, str(exc), delay_s))
            return
        service.started_at = time.monotonic()
        self._record(service)
        self.log(reasons.service_started(service.name, service.process.pid, service.restarts))

    def env_of(self, service: Service) -> dict[str, str]:
        """A service's environment: the supervisor's, less what the plan withholds from it."""
        env = dict(self.env if self.env is not None else os.environ)
        if service.bare:
            return child_env(parent=env)
        for name in service.withhold:
            env.pop(name, None)
        return env

    def _record(self, service: Service) -> None:
        self.state.record(service.name, service.process.pid, service.command, restarts=service.restarts,
                          last_exit=service.last_exit)

    def _next_delay(self, service: Service) -> float:
        if service.started_at and time.monotonic() - service.started_at >= STABLE_AFTER_S:
            service.delay_s = FIRST_DELAY_S  # it ran long enough: this is a new failure, not the same one
        delay_s = service.delay_s
        service.delay_s = min(delay_s * 2, MAX_DELAY_S)
        return delay_s

    def ended(self, service: Service, code: int) -> None:
        _kill_group(service.process.pid, signal.SIGKILL)  # what it left behind in its process group
        service.process = None
        service.restarts += 1
        service.last_exit = code
        delay_s = self._next_delay(service)
        service.start_at = time.monotonic() + delay_s
        self.log(reasons.service_restarting(service.name, code, delay_s=delay_s, restart=service.restarts))
        self.state.update_record(service.name, restarts=service.restarts, last_exit=code)

    # --- the stack
    def run(self, stop: threading.Event) -> None:
        for service in self.services:
            self.start(service)
            if service.name == REDIS and service.process is not None:
                self._wait_for_redis(stop)
        while not stop.is_set():
            self.watch_once()
            stop.wait(POLL_S)
        self.stop_all()

    def watch_once(self) -> None:
        held = self.state.held()
        for service in self.services:
            if service.name in held or service.stopping_since:
                self.hold(service, held=service.name in held)
                continue
            if service.process is not None:
                code = service.process.poll()
                if code is not None:
                    self.ended(service, code)
            if service.process is None and time.monotonic() >= service.start_at:
                self.start(service)

    def hold(self, service: Service, *, held: bool) -> None:
        """`training stop`: stop the service (SIGTERM to its group, SIGKILL after STOP_GRACE_S)
        without holding up the watch of the others, and leave it stopped while it is `held`;
        `training start` (no longer held): start it at once."""
        now = time.monotonic()
        if service.process is not None:
            code = service.process.poll()
            if code is None:
                if not service.stopping_since:
                    _kill_group(service.process.pid, signal.SIGTERM)
                    service.stopping_since = now
                    self.log(reasons.service_stopping_on_request(service.name, service.process.pid))
                elif now - service.stopping_since >= STOP_GRACE_S:
                    self.log(reasons.service_did_not_stop(service.name, service.process.pid, STOP_GRACE_S))
                    _kill_group(service.process.pid, signal.SIGKILL)
                return
            _kill_group(service.process.pid, signal.SIGKILL)  # what it left behind in its process group
            service.process, service.last_exit = None, code
            self.log(reasons.service_held(service.name))
        service.stopping_since = 0.0
        if held and not service.held:
            service.held = True
            self.state.update_record(service.name, held=True, last_exit=service.last_exit)
        elif not held:
            service.held = False
            service.start_at, service.delay_s = now, FIRST_DELAY_S

    def _wait_for_redis(self, stop: threading.Event) -> None:
        url = (self.env or os.environ).get("TRAINING_REDIS_URL", "")
        deadline = time.monotonic() + REDIS_WAIT_S
        redis = next(s for s in self.services if s.name == REDIS)
        while time.monotonic() < deadline and not stop.is_set() and redis.process.poll() is None:
            if redis_answers(url, timeout_s=0.5):
                return
            time.sleep(0.1)  # the others start anyway: they reconnect once it answers

    def stop_all(self) -> None:
        self.log(reasons.SUPERVISOR_STOPPING)
        for group in ([s for s in self.services if s.name != REDIS], [s for s in self.services if s.name == REDIS]):
            running = [s for s in group if s.process is not None and s.process.poll() is None]
            for service in running:
                _kill_group(service.process.pid, signal.SIGTERM)
            deadline = time.monotonic() + STOP_GRACE_S
            for service in running:
                try:
                    service.process.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    self.log(reasons.service_did_not_stop(service.name, service.process.pid, STOP_GRACE_S))
                _kill_group(service.process.pid, signal.SIGKILL)  # and anything left in its group


def _kill_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def load(state: StackState) -> list[Service]:
    stack = json.loads((state.root / PLAN).read_text())
    return [Service(entry["name"], list(entry["command"]), tuple(entry.get("withhold") or ()), bool(entry.get("bare")))
            for entry in stack["services"]]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    use_private_umask()  # the services and Redis (its AOF) inherit it: every file of the stack is private
    state = StackState(Path(args[0]))
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    Supervisor(state, load(state)).run(stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
