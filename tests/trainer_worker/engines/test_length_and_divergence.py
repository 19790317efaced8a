"""Rows a run's maxSeqLength leaves without a trained token, and a loss that diverges, are said in
sentences (issue 30) instead of a library's words (torch's `num_samples=0`) or steps of NaN. Real
training of the built-in tiny model on the CPU; the divergence test drives the callback directly with
the Trainer's own log of a step (a real NaN needs a learning rate and luck no test can promise)."""

from __future__ import annotations

import math
import re
from types import SimpleNamespace

import pytest

from services.trainer_worker.engines.kit import ReporterCallback
from services.trainer_worker.engines.sft import run_sft
from shared.errors import WorkFailed
from tests.trainer_worker.doubles import RecordingReporter, make_job


def test_a_length_that_leaves_no_row_fails_before_any_step_naming_the_length_that_would_do(model_dir, tmp_path):
    reporter = RecordingReporter()
    with pytest.raises(WorkFailed) as failed:
        run_sft(make_job(model_dir, tmp_path, maxSeqLength=8, maxSteps=2, every_steps=None), reporter)
    sentence = failed.value.sentence
    assert re.fullmatch(
        r"no row is left to train on: none of the 256 row\(s\) has a token the loss is taken over within "
        r"maxSeqLength 8 \(the shortest prompt fills (\d+) tokens\)\. Set maxSeqLength to at least (\d+), or "
        r"shorten the rows' prompts", sentence), sentence
    needed = int(re.search(r"at least (\d+)", sentence).group(1))
    assert reporter.points == []
    # the length it names is enough: the row with the shortest prompt trains
    result = run_sft(make_job(model_dir, tmp_path / "enough", maxSeqLength=needed, maxSteps=1, every_steps=None),
                     enough := RecordingReporter())
    assert result.final_step == 1
    warned = [m for level, m in enough.events if level == "warn"]
    assert len(warned) == 1 and re.fullmatch(
        rf"\d+ of 256 row\(s\) have no token the loss is taken over within maxSeqLength {needed} and are left out; "
        "raise maxSeqLength to train on them", warned[0]), warned


def test_a_loss_that_is_not_a_number_fails_the_run_saying_what_to_change(model_dir, tmp_path):
    reporter = RecordingReporter()
    callback = ReporterCallback(make_job(model_dir, tmp_path), reporter)
    state = SimpleNamespace(global_step=7, num_input_tokens_seen=100, epoch=0.5)
    with pytest.raises(WorkFailed) as failed:
        callback.on_log(None, state, None, logs={"loss": math.nan, "learning_rate": 0.5, "grad_norm": math.nan})
    assert failed.value.sentence == ("the loss was nan at step 7: training diverged. Lower learningRate (it was 0.5 "
                                     "at that step), or train in fp32 or bf16 rather than fp16")
    assert [p["step"] for p in reporter.points] == [7]  # the point that showed it is kept
