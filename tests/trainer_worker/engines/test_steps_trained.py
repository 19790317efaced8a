"""How many steps an engine trains (issue 30): maxSteps is the step a run ends at, on its own step
count. A trainingState restore continues its snapshot's count; a weights restore counts from 0. The
engine reports the step it started from, so the worker can tell a run that trained nothing (which
never ends SUCCEEDED in silence: tests/trainer_worker/test_steps_trained_end.py). Real training of the
built-in tiny model on the CPU."""

from __future__ import annotations

import pytest

from services.trainer_worker.engines.base import NothingToTrain, Restore
from services.trainer_worker.engines.sft import run_sft
from tests.trainer_worker.doubles import RecordingReporter, make_job


@pytest.fixture(scope="module")
def parent(model_dir, tmp_path_factory):
    """A 6-step run with snapshots (and training state) at steps 3 and 6."""
    reporter = RecordingReporter()
    run_sft(make_job(model_dir, tmp_path_factory.mktemp("parent"), maxSteps=6, every_steps=3), reporter)
    return reporter


def test_a_training_state_restore_continues_the_snapshots_step_count(parent, model_dir, tmp_path):
    reporter = RecordingReporter()
    job = make_job(model_dir, tmp_path, maxSteps=8, every_steps=None,
                   restore=Restore("trainingState", parent.snapshot_at(6)))
    result = run_sft(job, reporter)
    assert (result.start_step, result.final_step, result.trained_steps) == (6, 8, 2)
    assert [p["step"] for p in reporter.points] == [7, 8] and reporter.total_steps == 8


@pytest.mark.parametrize("max_steps", [6, 3])
def test_a_training_state_restore_at_or_past_its_plans_end_takes_no_step(parent, model_dir, tmp_path, max_steps):
    """What the API refuses at submission (shared/plans/check.py), as an engine meets it (a plan by
    epochs the API could only estimate): left alone, the Trainer would take one step past the plan's
    end (step 7 of maxSteps 3); the engine stops before any step, saying why."""
    reporter = RecordingReporter()
    job = make_job(model_dir, tmp_path, maxSteps=max_steps, every_steps=None,
                   restore=Restore("trainingState", parent.snapshot_at(6)))
    with pytest.raises(NothingToTrain) as raised:
        run_sft(job, reporter)
    assert (raised.value.start_step, raised.value.end_step) == (6, max_steps)
    assert raised.value.sentence == (
        f"there is no step to train: it starts at step 6, and its plan ends at step {max_steps}. maxSteps is the "
        "step a run ends at; a trainingState branch counts on from its snapshot's step")
    assert reporter.points == [] and reporter.snapshots == []


def test_a_weights_restore_counts_from_zero(parent, model_dir, tmp_path):
    reporter = RecordingReporter()
    job = make_job(model_dir, tmp_path, maxSteps=3, every_steps=None,
                   restore=Restore("weights", parent.snapshot_at(6)))
    result = run_sft(job, reporter)
    assert (result.start_step, result.final_step, result.trained_steps) == (0, 3, 3)
    assert [p["step"] for p in reporter.points] == [1, 2, 3]


def test_across_two_slots_rank_0_says_there_is_no_step_to_train(two_slots, model_dir, tmp_path):
    """engines/distributed.py: every rank finds it alike; rank 0 tells the worker, which raises the
    same NothingToTrain as on one device (not `rank 0 of 2 failed`)."""
    from services.trainer_worker.engines import train

    _, parent, _ = two_slots
    job = make_job(model_dir, tmp_path, maxSteps=6, every_steps=None, devices=2,
                   restore=Restore("trainingState", parent.snapshot_at(6)))
    with pytest.raises(NothingToTrain) as raised:
        train(job, RecordingReporter())
    assert (raised.value.start_step, raised.value.end_step) == (6, 6)
