"""The evaluation state machine (SPEC 2.5): every pair of statuses, allowed or refused."""

import itertools

import pytest

from shared.lifecycle.states import EvaluationStatus, IllegalTransition, evaluation_edges, evaluation_transition

ALLOWED = {
    ("QUEUED", "STARTING"), ("QUEUED", "CANCELLED"), ("QUEUED", "FAILED"),
    ("STARTING", "RUNNING"), ("STARTING", "QUEUED"), ("STARTING", "FAILED"), ("STARTING", "CANCELLED"),
    ("RUNNING", "SUCCEEDED"), ("RUNNING", "FAILED"), ("RUNNING", "CANCELLED"), ("RUNNING", "QUEUED"),
}


@pytest.mark.parametrize("current, target", list(itertools.product(EvaluationStatus, EvaluationStatus)))
def test_every_pair_of_evaluation_statuses(current, target):
    if (current.value, target.value) in ALLOWED:
        assert evaluation_transition(current, target) is target
    else:
        with pytest.raises(IllegalTransition, match=f"an evaluation cannot go from {current} to {target}"):
            evaluation_transition(current, target)


def test_terminal_evaluation_statuses_have_no_way_out():
    assert EvaluationStatus.terminal() == {EvaluationStatus.SUCCEEDED, EvaluationStatus.FAILED,
                                           EvaluationStatus.CANCELLED}
    assert all(not evaluation_edges()[s] for s in EvaluationStatus.terminal())
