"""A run that names a validationDataset scores it every few steps and at the end (issue 7):
validation loss and perplexity land in the run's metrics beside the training loss."""

from __future__ import annotations

import dataclasses
import math

import pytest

from services.trainer_worker.engines.sft import run_sft, validate_every
from shared.models.tiny_models import SAMPLE_DATASET
from tests.shared.plans.plan_fixtures import amended, typed
from tests.trainer_worker.doubles import RecordingReporter, make_job


@pytest.fixture(scope="module")
def validated(model_dir, tmp_path_factory):
    work = tmp_path_factory.mktemp("work")
    lines = SAMPLE_DATASET.read_text().splitlines()
    train, held_out = work / "train.jsonl", work / "validation.jsonl"
    train.write_text("\n".join(lines[:224]) + "\n")
    held_out.write_text("\n".join(lines[224:]) + "\n")  # 32 rows the run never trains on
    job = make_job(model_dir, work, dataset=train, every_steps=None, maxSteps=12)
    job.plan = amended(job.plan, {"validationDataset": "ds-validation", "validation": {"everySteps": 5}})
    job = dataclasses.replace(job, validation_path=held_out)
    reporter = RecordingReporter()
    return reporter, run_sft(job, reporter)


def test_validation_points_come_every_n_steps_and_at_the_last_step(validated):
    reporter, result = validated
    points = [p for p in reporter.points if "validationLoss" in p]
    assert [p["step"] for p in points] == [5, 10, 12] and result.final_step == 12
    for point in points:
        assert set(point) == {"step", "validationLoss", "validationPerplexity"}
        assert point["validationPerplexity"] == pytest.approx(math.exp(point["validationLoss"]))
    training = [p for p in reporter.points if "loss" in p]
    assert [p["step"] for p in training] == list(range(1, 13))  # the training series is unchanged


def test_validation_loss_falls_as_the_run_learns_the_task(validated):
    reporter, _ = validated
    losses = [p["validationLoss"] for p in reporter.points if "validationLoss" in p]
    assert losses[-1] < losses[0] - 0.5, losses
    assert any("validating on 32 rows" in message for _, message in reporter.events)


def test_how_often_a_plan_validates():
    assert validate_every(typed({"snapshots": {"everySteps": 50}})) is None  # no validation dataset
    plan = {"validationDataset": "ds-1", "snapshots": {"everySteps": 50}, "validation": {"everySteps": None}}
    assert validate_every(typed(plan)) == 50  # the snapshot interval
    assert validate_every(typed({**plan, "validation": {"everySteps": 7}})) == 7
    assert validate_every(typed({"validationDataset": "ds-1", "snapshots": {"everySteps": None}})) > 10**9  # end only


def test_validating_does_not_change_what_the_run_trains(validated, model_dir, tmp_path):
    reporter, _ = validated
    lines = SAMPLE_DATASET.read_text().splitlines()
    train = tmp_path / "train.jsonl"
    train.write_text("\n".join(lines[:224]) + "\n")
    plain = RecordingReporter()
    run_sft(make_job(model_dir, tmp_path, dataset=train, every_steps=None, maxSteps=12), plain)
    assert [p["loss"] for p in plain.points] == [p["loss"] for p in reporter.points if "loss" in p]
