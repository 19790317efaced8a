"""The warmup never trains a step at learning rate 0 (issue 29 item 4; engines/lr_schedule.py):
step k of a W-step warmup trains at k/(W+1) of the rate, and after the warmup the schedule is
transformers' linear decay, unchanged. Checked on the factor itself and on a real SFT run's
recorded learningRate (the rate each step trained at)."""

from __future__ import annotations

import pytest
from transformers.optimization import _get_linear_schedule_with_warmup_lr_lambda as transformers_linear

from services.trainer_worker.engines.lr_schedule import warmup_then_linear
from services.trainer_worker.engines.sft import run_sft
from tests.trainer_worker.doubles import RecordingReporter, make_job


def test_the_warmup_starts_above_zero_and_the_decay_is_transformers_own():
    warmup, total = 3, 10
    factors = [warmup_then_linear(s, warmup_steps=warmup, total_steps=total) for s in range(total)]
    assert factors[:4] == [1 / 4, 2 / 4, 3 / 4, 1.0]
    assert transformers_linear(0, num_warmup_steps=warmup, num_training_steps=total) == 0.0  # what it fixes
    for step in range(warmup, total):
        assert factors[step] == transformers_linear(step, num_warmup_steps=warmup, num_training_steps=total)
    assert factors == sorted(factors[:4]) + factors[4:] and factors[-1] == pytest.approx(1 / 7)


def test_without_warmup_nothing_changes():
    assert [warmup_then_linear(s, warmup_steps=0, total_steps=4) for s in range(4)] == [1.0, 0.75, 0.5, 0.25]


def test_a_run_with_warmup_records_a_positive_rate_for_its_first_step(model_dir, tmp_path):
    reporter = RecordingReporter()
    run_sft(make_job(model_dir, tmp_path, maxSteps=6, warmupSteps=3, every_steps=None), reporter)
    rates = [point["learningRate"] for point in reporter.points]
    assert rates == pytest.approx([0.002 * f for f in (1 / 4, 2 / 4, 3 / 4, 1.0, 2 / 3, 1 / 3)])
    assert rates[0] > 0


def test_a_layout1_training_state_keeps_the_schedule_it_was_saved_under():
    """Release 0.5's snapshots continue as their parent trained (transformers' warmup); a fresh run,
    a weights branch and a layout-2 training state get the warmup that never trains at 0.
    (test_layout1.py checks the continuation is exact.)"""
    from types import SimpleNamespace

    from services.trainer_worker.engines.lr_schedule import warm_up_from_the_first_step

    def trainer():
        return SimpleNamespace(args=SimpleNamespace(lr_scheduler_type="linear"), lr_scheduler=None)

    def restore(layout, checkpoint="ckpt"):
        return SimpleNamespace(checkpoint=checkpoint, manifest={"layout": layout})

    assert not hasattr(warm_up_from_the_first_step(trainer(), restore(1)), "create_scheduler")
    for restored in (None, restore(2), restore(1, checkpoint=None)):
        assert hasattr(warm_up_from_the_first_step(trainer(), restored), "create_scheduler")
    cosine = SimpleNamespace(args=SimpleNamespace(lr_scheduler_type="cosine"), lr_scheduler=None)
    assert not hasattr(warm_up_from_the_first_step(cosine), "create_scheduler")
