"""Endpoints: as the API sees them (requests through the trainer's proxy), as the endpoint manager
moves them (services/endpoint_manager), and on a node whose endpoint manager is gone
(services/scheduler/lost_endpoints.py)."""

from __future__ import annotations

from shared.reasons.phrases import how_it_ended, idle_text


def endpoint_stopped_before_request(endpoint_id: str) -> str:
    return f"endpoint {endpoint_id} was stopped before this request reached it"


def endpoint_not_ready(endpoint_id: str, phase: str) -> str:
    """A request through the trainer to an endpoint that is not READY is refused with its phase."""
    return f"endpoint {endpoint_id} is {phase}; it answers requests once READY"


def endpoint_ended(endpoint_id: str, phase: str, detail: str | None) -> str:
    """A request through the trainer to an endpoint that has ended (TERMINATED, FAILED): refused
    with its phase and why, since it will never be READY again."""
    why = f" ({detail})" if detail else ""
    return (f"endpoint {endpoint_id} is {phase}{why} and answers no more requests; "
            "`training endpoints create` starts a new one")


def endpoint_name_taken(name: str, endpoint_id: str, phase: str) -> str:
    return f"endpoint name {name} is taken by {endpoint_id} ({phase})"


def endpoint_name_ambiguous(name: str, workloads: list[str]) -> str:
    """A name used by live endpoints of several workloads this token may use (names are per workload)."""
    return (f"endpoint name {name} names live endpoints of workloads {', '.join(workloads)}; "
            "use the endpoint's id")


def endpoint_unknown(model: str) -> str:
    return f"no endpoint has the id or name {model}; `training endpoints get` lists them"


ENDPOINT_STOPPED_BY_USER = "stopped by the user"


ENDPOINT_PROCESS_UNREACHABLE = "the endpoint's serving process did not answer"


# The warn event of an endpoint whose serving process refused or dropped a proxied request's
# connection: the proxy sent it back to STARTING (shared/lifecycle/endpoints.process_gone).
ENDPOINT_PROCESS_GONE = ("a request found its serving process gone (connection refused or reset); "
                         "STARTING until the endpoint manager sees it answer or starts another")


ENDPOINT_PROCESS_LOST = "serving process lost; starting it again"


def endpoint_ready(address: str) -> str:
    """The event of an endpoint whose serving process answered its first probe."""
    return f"ready at {address}"


def endpoint_process_started(*, pid: int, port: int, backend: str) -> str:
    return f"serving process started on port {port} (pid {pid}, backend {backend})"


def endpoint_start_timed_out(start_timeout_s: int | float) -> str:
    """Detail of an endpoint that was STARTING for longer than its startTimeout."""
    return f"did not become ready within {int(start_timeout_s)}s; see its log"


def endpoint_process_ended(exit_code: int) -> str:
    """Detail of an endpoint whose serving process ended before it answered."""
    return f"its serving process {how_it_ended(exit_code)} before it was ready; see its log"


def endpoint_could_not_start(error: str) -> str:
    return f"could not start its serving process: {error}"


def endpoint_idle_stopped(idle_timeout_s: int | float) -> str:
    """Detail of an endpoint stopped by its idleTimeout (SPEC 6): `stopped after 1h00m without a request`."""
    return f"stopped after {idle_text(idle_timeout_s)} without a request"


def endpoint_manager_lost(node: str) -> str:
    """Event of a READY or STARTING endpoint whose node has had no endpoint manager for too long."""
    return f"no endpoint manager runs on node {node}; its serving process is presumed lost until one is back"


def endpoint_start_timed_out_without_manager(start_timeout_s: int | float, node: str) -> str:
    """Detail of an endpoint whose start timeout passed while its node had no endpoint manager."""
    return f"did not become ready within {int(start_timeout_s)}s: no endpoint manager ran on node {node}"


def endpoint_log_missing(endpoint_id: str, phase: str) -> str:
    """GET /v1/endpoints/ID/logs before its serving process was ever started (or after its log went)."""
    return f"endpoint {endpoint_id} has no serving log ({phase}); its log starts with its serving process"


def endpoint_answer_unreadable(endpoint_id: str, status: int) -> str:
    """A serving process answered a proxied request with an error whose body is not a JSON error."""
    return f"the serving process of endpoint {endpoint_id} answered {status} without a readable error"


def endpoint_process_failed(endpoint_id: str, message: str) -> str:
    """A serving process answered a proxied request with a 5xx: relayed as 502, its sentence kept."""
    return f"the serving process of endpoint {endpoint_id} failed to answer: {message}"


def endpoint_moved_off(node: str) -> str:
    """Warn event of a READY or STARTING endpoint moved off a node whose endpoint manager is gone
    (services/scheduler/lost_endpoints.py): it queues again for a node that has one."""
    return (f"no endpoint manager runs on node {node}; back in the queue keeping its place, to start on a node "
            "that has one")


def endpoint_already_stopped(endpoint_id: str, phase: str) -> str:
    return f"endpoint {endpoint_id} has already stopped ({phase})"


ENDPOINT_STOP_REQUESTED = "stop requested by the user"
# A request through the trainer's proxy that names no endpoint.
PROXY_MODEL_MISSING = "the request needs `model`: an endpoint's id or name"


def endpoint_log_lines_invalid(most: int) -> str:
    return f"lines must be a whole number from 1 to {most}"
