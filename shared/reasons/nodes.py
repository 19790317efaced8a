"""Work whose worker or node went away: a worker lost, restarted or asked to stop (issue 26:
services/trainer_worker/stopping.py, takeover.py), a process killed under a live worker, a node
whose service stopped answering (issue 27: services/scheduler/dead_nodes.py, lost.py;
shared/claims/nodes.py)."""

from __future__ import annotations



def worker_lost_requeued(node: str) -> str:
    """The warn event of a run whose worker stopped renewing its lease."""
    return f"worker lost on node {node}; re-queued keeping its place"


def worker_lost_cancelled(node: str) -> str:
    """Detail of a cancel-requested run whose worker was lost before it stopped the run."""
    return f"cancelled by the user; its worker on node {node} was lost before it stopped"


def worker_restarted_requeued(node: str) -> str:
    """The warn event of a run (or evaluation) its node's worker found orphaned when it started
    again (services/trainer_worker/reclaim.py): the worker that held it died with it."""
    return f"worker restarted on node {node}; re-queued keeping its place"


def worker_restarted_cancelled(node: str) -> str:
    """Detail of a cancel-requested run whose node's worker restarted before it stopped the run."""
    return f"cancelled by the user; its worker on node {node} restarted before it stopped"


def worker_stopping(grace_s: float) -> str:
    """The event of a run whose worker was asked to stop (SIGTERM: `training down`, docker compose
    stop or restart, systemd) while it trained: it saves at its next step boundary first."""
    return (f"its worker is stopping: writing a snapshot at the next step boundary (waiting at most {grace_s:g} s), "
            "then re-queueing the run")


def worker_stopped_requeued(node: str) -> str:
    """The warn event of a run or evaluation its worker gave back because the worker was stopped."""
    return f"worker on node {node} stopped; re-queued keeping its place"


def worker_stopped_cancelled(node: str) -> str:
    """Detail of a cancel-requested run or evaluation whose worker was stopped before it ended it."""
    return f"cancelled by the user; its worker on node {node} stopped before it did"


def worker_stopped_unsaved(grace_s: float) -> str:
    """The warn event of a run whose worker stopped before a step boundary came within the grace."""
    return (f"no step boundary came within {grace_s:g} s of the worker's stop: re-queued without a new snapshot, "
            "it resumes from its latest one")


def process_lost_requeued(kind: str, node: str, lost: int, limit: int) -> str:
    """The warn event of a run or evaluation whose process died under a live worker (killed from
    outside: the kernel's out-of-memory killer, a signal), found by the task delivered again."""
    return (f"the process that ran this {kind} on node {node} died (killed from outside it, for example by the "
            f"out-of-memory killer); re-queued keeping its place (loss {lost} of {limit} before it fails)")


def process_lost_cancelled(kind: str, node: str) -> str:
    """Detail of a cancel-requested run or evaluation whose process died before it ended it."""
    return f"cancelled by the user; the process that ran this {kind} on node {node} died before it stopped"


def process_lost_failed(kind: str, node: str, lost: int, *, since_snapshot: bool) -> str:
    """Detail of a run or evaluation whose process kept dying: failed instead of started again."""
    between = " with no new snapshot between them" if since_snapshot else ""
    return (f"the process that ran this {kind} on node {node} died {lost} times{between} (killed from outside it, "
            "for example by the out-of-memory killer); failed instead of started again")


def node_not_answering(node: str, *, kind: str, after_s: float) -> str:
    """Warn event of a dispatched run or evaluation, the first time the scheduler sees its node's
    worker heartbeat gone (it waits `after_s` more before moving it)."""
    return (f"node {node} stopped answering (its worker's heartbeat is gone); the {kind} goes back to the "
            f"queue unless it answers within {after_s:g}s")


def node_dead_requeued(node: str) -> str:
    """Warn event of a run or evaluation given back because its node stopped answering."""
    return f"node {node} stopped answering; re-queued keeping its place"


def node_dead_cancelled(node: str) -> str:
    """Detail of a cancel-requested run whose node stopped answering before it stopped the run."""
    return f"cancelled by the user; its node {node} stopped answering before it stopped"


def node_service_state(*, alive: bool, ready: bool = True) -> str:
    """How `training pools get` and `training info` show one service of a node."""
    if not alive:
        return "not answering"
    return "alive" if ready else "alive, still starting"
