"""State machines of the resources, one per kind (SPEC 2.3, 2.5, 2.6).

Each kind has a StrEnum with a comment per member, its terminal set, an explicit table of the
edges it may take, and one `transition()` that refuses any other edge. Nothing else decides
whether a status may change.
"""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    QUEUED = "QUEUED"  # waiting in its pool's queue for GPUs
    STARTING = "STARTING"  # GPUs granted, the worker is loading the engine
    RUNNING = "RUNNING"  # training steps are being taken
    PAUSED = "PAUSED"  # stopped with a training-state snapshot, GPUs released, may resume
    SUCCEEDED = "SUCCEEDED"  # trained to the end; its final snapshot is written
    FAILED = "FAILED"  # stopped by an error; `detail` says which
    CANCELLED = "CANCELLED"  # stopped by the user

    @classmethod
    def terminal(cls) -> frozenset["RunStatus"]:
        return frozenset({cls.SUCCEEDED, cls.FAILED, cls.CANCELLED})

    @property
    def is_terminal(self) -> bool:
        return self in self.terminal()


_RUN_EDGES: dict[RunStatus, frozenset[RunStatus]] = {
    RunStatus.QUEUED: frozenset({RunStatus.STARTING, RunStatus.CANCELLED, RunStatus.FAILED}),
    # STARTING/RUNNING -> QUEUED: the worker was lost, the run waits again keeping its place.
    RunStatus.STARTING: frozenset(
        {RunStatus.RUNNING, RunStatus.QUEUED, RunStatus.FAILED, RunStatus.CANCELLED}
    ),
    RunStatus.RUNNING: frozenset(
        {
            RunStatus.SUCCEEDED,
            RunStatus.FAILED,
            RunStatus.CANCELLED,
            RunStatus.PAUSED,
            RunStatus.QUEUED,
        }
    ),
    RunStatus.PAUSED: frozenset({RunStatus.QUEUED, RunStatus.CANCELLED}),
    RunStatus.SUCCEEDED: frozenset(),
    RunStatus.FAILED: frozenset(),
    RunStatus.CANCELLED: frozenset(),
}


class IllegalTransition(Exception):
    def __init__(self, kind: str, current: str, target: str):
        article = "an" if kind[:1] in "aeiou" else "a"
        super().__init__(f"{article} {kind} cannot go from {current} to {target}")
        self.kind, self.current, self.target = kind, current, target


def run_transition(current: RunStatus | str, target: RunStatus | str) -> RunStatus:
    """Return `target` if a run may go there from `current`, else raise IllegalTransition."""
    current, target = RunStatus(current), RunStatus(target)
    if target not in _RUN_EDGES[current]:
        raise IllegalTransition("run", current, target)
    return target


def run_edges() -> dict[RunStatus, frozenset[RunStatus]]:
    return dict(_RUN_EDGES)


class ClaimState(StrEnum):
    WAITING = "WAITING"  # in its pool's sorted set, not yet granted
    GRANTED = "GRANTED"  # holds devices of one node; its work is dispatched to that node
    RELEASED = "RELEASED"  # gave its devices back (work ended or was cancelled)


class EndpointPhase(StrEnum):
    QUEUED = "QUEUED"  # waiting in its pool's queue for GPUs
    STARTING = "STARTING"  # GPUs granted; its serving process is starting (or restarting after a loss)
    READY = "READY"  # its serving process answers; requests are proxied to its address
    TERMINATED = "TERMINATED"  # stopped (deleted, or idle past its idleTimeout); GPUs released
    FAILED = "FAILED"  # could not be served (start timeout, process error); `detail` says why

    @classmethod
    def terminal(cls) -> frozenset["EndpointPhase"]:
        return frozenset({cls.TERMINATED, cls.FAILED})

    @property
    def is_terminal(self) -> bool:
        return self in self.terminal()


_ENDPOINT_EDGES: dict[EndpointPhase, frozenset[EndpointPhase]] = {
    EndpointPhase.QUEUED: frozenset({EndpointPhase.STARTING, EndpointPhase.TERMINATED, EndpointPhase.FAILED}),
    # STARTING/READY -> QUEUED: its node's endpoint manager is gone and another node has one: it gives
    # its GPUs back and queues again, keeping its place, to start there (services/scheduler/lost_endpoints.py).
    EndpointPhase.STARTING: frozenset({EndpointPhase.READY, EndpointPhase.QUEUED, EndpointPhase.TERMINATED,
                                       EndpointPhase.FAILED}),
    # READY -> STARTING: its serving process was lost; it keeps its GPUs and is started again.
    EndpointPhase.READY: frozenset({EndpointPhase.STARTING, EndpointPhase.QUEUED, EndpointPhase.TERMINATED,
                                    EndpointPhase.FAILED}),
    EndpointPhase.TERMINATED: frozenset(),
    EndpointPhase.FAILED: frozenset(),
}


def endpoint_transition(current: EndpointPhase | str, target: EndpointPhase | str) -> EndpointPhase:
    """Return `target` if an endpoint may go there from `current`, else raise IllegalTransition."""
    current, target = EndpointPhase(current), EndpointPhase(target)
    if target not in _ENDPOINT_EDGES[current]:
        raise IllegalTransition("endpoint", current, target)
    return target


def endpoint_edges() -> dict[EndpointPhase, frozenset[EndpointPhase]]:
    return dict(_ENDPOINT_EDGES)


class EvaluationStatus(StrEnum):
    QUEUED = "QUEUED"  # waiting in its pool's queue for GPUs (again, after its worker was lost)
    STARTING = "STARTING"  # GPUs granted, the worker is loading the model through the load spec
    RUNNING = "RUNNING"  # rows are being scored
    SUCCEEDED = "SUCCEEDED"  # every row scored; metrics and per-row results are written
    FAILED = "FAILED"  # stopped by an error; `detail` says which
    CANCELLED = "CANCELLED"  # stopped by the user

    @classmethod
    def terminal(cls) -> frozenset["EvaluationStatus"]:
        return frozenset({cls.SUCCEEDED, cls.FAILED, cls.CANCELLED})

    @property
    def is_terminal(self) -> bool:
        return self in self.terminal()


_EVALUATION_EDGES: dict[EvaluationStatus, frozenset[EvaluationStatus]] = {
    EvaluationStatus.QUEUED: frozenset({EvaluationStatus.STARTING, EvaluationStatus.CANCELLED, EvaluationStatus.FAILED}),
    # STARTING/RUNNING -> QUEUED: the worker was lost; the evaluation waits again keeping its place
    # and scores every row again (it keeps nothing half-done).
    EvaluationStatus.STARTING: frozenset(
        {EvaluationStatus.RUNNING, EvaluationStatus.QUEUED, EvaluationStatus.FAILED, EvaluationStatus.CANCELLED}
    ),
    EvaluationStatus.RUNNING: frozenset(
        {EvaluationStatus.SUCCEEDED, EvaluationStatus.FAILED, EvaluationStatus.CANCELLED, EvaluationStatus.QUEUED}
    ),
    EvaluationStatus.SUCCEEDED: frozenset(),
    EvaluationStatus.FAILED: frozenset(),
    EvaluationStatus.CANCELLED: frozenset(),
}


def evaluation_transition(current: EvaluationStatus | str, target: EvaluationStatus | str) -> EvaluationStatus:
    """Return `target` if an evaluation may go there from `current`, else raise IllegalTransition."""
    current, target = EvaluationStatus(current), EvaluationStatus(target)
    if target not in _EVALUATION_EDGES[current]:
        raise IllegalTransition("evaluation", current, target)
    return target


def evaluation_edges() -> dict[EvaluationStatus, frozenset[EvaluationStatus]]:
    return dict(_EVALUATION_EDGES)
