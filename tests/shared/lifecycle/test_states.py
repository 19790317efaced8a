import itertools

import pytest

from shared.lifecycle.states import (
    EndpointPhase,
    IllegalTransition,
    RunStatus,
    endpoint_transition,
    run_edges,
    run_transition,
)

ALLOWED = {
    ("QUEUED", "STARTING"), ("QUEUED", "CANCELLED"), ("QUEUED", "FAILED"),
    ("STARTING", "RUNNING"), ("STARTING", "QUEUED"), ("STARTING", "FAILED"), ("STARTING", "CANCELLED"),
    ("RUNNING", "SUCCEEDED"), ("RUNNING", "FAILED"), ("RUNNING", "CANCELLED"), ("RUNNING", "PAUSED"),
    ("RUNNING", "QUEUED"),
    ("PAUSED", "QUEUED"), ("PAUSED", "CANCELLED"),
}


@pytest.mark.parametrize("current, target", list(itertools.product(RunStatus, RunStatus)))
def test_every_pair_of_run_statuses(current, target):
    if (current.value, target.value) in ALLOWED:
        assert run_transition(current, target) is target
    else:
        with pytest.raises(IllegalTransition, match=f"a run cannot go from {current} to {target}"):
            run_transition(current, target)


def test_terminal_statuses_have_no_way_out():
    assert RunStatus.terminal() == {RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED}
    assert all(not run_edges()[s] for s in RunStatus.terminal())


ENDPOINT_ALLOWED = {
    ("QUEUED", "STARTING"), ("QUEUED", "TERMINATED"), ("QUEUED", "FAILED"),
    ("STARTING", "READY"), ("STARTING", "QUEUED"), ("STARTING", "TERMINATED"), ("STARTING", "FAILED"),
    ("READY", "STARTING"), ("READY", "QUEUED"), ("READY", "TERMINATED"), ("READY", "FAILED"),
}


@pytest.mark.parametrize("current, target", list(itertools.product(EndpointPhase, EndpointPhase)))
def test_every_pair_of_endpoint_phases(current, target):
    if (current.value, target.value) in ENDPOINT_ALLOWED:
        assert endpoint_transition(current, target) is target
    else:
        with pytest.raises(IllegalTransition, match=f"an endpoint cannot go from {current} to {target}"):
            endpoint_transition(current, target)
