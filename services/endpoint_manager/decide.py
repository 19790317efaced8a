"""What to do with one endpoint this pass, derived from stored facts and probe results only.

`decide` is pure: the endpoint document as stored, what the manager saw of its serving process
(`Probe`), the time, and whether a running run uses it as a judge. It never reads Redis or a
process; services/endpoint_manager/manager.py gathers the facts and carries the decision out.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from shared import reasons
from shared.lifecycle.endpoints import idle_expired, process_lost, start_timed_out
from shared.lifecycle.states import EndpointPhase

# A READY endpoint whose process is alive but fails this many probes in a row is lost.
LOST_AFTER_FAILED_PROBES = 3


class Action(StrEnum):
    NOTHING = "nothing"  # nothing to change this pass (queued, loading, serving, or ended)
    START = "start"  # STARTING without a live process: write its load spec, start one
    READY = "ready"  # STARTING and its process answers: READY at its address
    RESTART = "restart"  # its process was lost (READY, or STARTING after a request found it gone): start another
    FAIL = "fail"  # STARTING that will not become ready (timeout, process ended): stop it, FAILED
    STOP = "stop"  # stop requested, or idle past its idleTimeout: stop it, TERMINATED
    REAP = "reap"  # ended endpoint whose process still runs: stop the process, change nothing


@dataclass(frozen=True)
class Probe:
    """What the manager saw of the endpoint's recorded serving process this pass."""

    alive: bool = False  # the recorded pid runs, and is the process started for this endpoint
    answers: bool = False  # GET /health answered 200 within the probe timeout
    failures: int = 0  # failed probes in a row while READY (or found lost), this one included
    exit_code: int | None = None  # how it ended, when this manager started it and saw it end


@dataclass(frozen=True)
class Decision:
    action: Action
    phase: EndpointPhase | None = None  # the phase it moves to, if any
    detail: str | None = None  # the detail sentence of a FAILED or TERMINATED endpoint


NOTHING = Decision(Action.NOTHING)


def decide(doc: dict[str, Any], probe: Probe, *, now: float, judge_in_use: bool = False) -> Decision:
    """One decision for one endpoint whose claim is granted on this manager's node."""
    phase = EndpointPhase(doc["phase"])
    if phase.is_terminal:
        return Decision(Action.REAP) if probe.alive else NOTHING
    if phase == EndpointPhase.QUEUED:
        return NOTHING  # the scheduler has not moved it to STARTING yet
    if doc.get("stopRequested"):
        return Decision(Action.STOP, EndpointPhase.TERMINATED, reasons.ENDPOINT_STOPPED_BY_USER)
    if phase == EndpointPhase.STARTING:
        return _starting(doc, probe, now)
    if idle_expired(doc, now) and not judge_in_use:
        return Decision(Action.STOP, EndpointPhase.TERMINATED, reasons.endpoint_idle_stopped(doc["idleTimeout"]))
    if not probe.alive or probe.failures >= LOST_AFTER_FAILED_PROBES:
        return Decision(Action.RESTART, EndpointPhase.STARTING)
    return NOTHING


def _starting(doc: dict[str, Any], probe: Probe, now: float) -> Decision:
    if probe.alive and probe.answers:
        return Decision(Action.READY, EndpointPhase.READY)
    if start_timed_out(doc, now):
        return Decision(Action.FAIL, EndpointPhase.FAILED, reasons.endpoint_start_timed_out(doc["startTimeout"]))
    if process_lost(doc):
        # A proxied request found the process that served it gone and sent the endpoint back here
        # (shared/lifecycle/endpoints.process_gone): lost, as a READY one is, not failed to start.
        if not probe.alive or probe.failures >= LOST_AFTER_FAILED_PROBES:
            return Decision(Action.RESTART, EndpointPhase.STARTING)
        return NOTHING  # alive: its next probes say whether it still answers
    if probe.exit_code is not None:
        return Decision(Action.FAIL, EndpointPhase.FAILED, reasons.endpoint_process_ended(probe.exit_code))
    if not probe.alive:
        return Decision(Action.START)
    return NOTHING  # loading: wait for it to answer or for its start timeout
