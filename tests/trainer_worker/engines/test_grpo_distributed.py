"""grpo-ddp: GRPO across two CPU slots (one rank process each under gloo, each rank with its own
rollout server), through engines.distributed as the worker runs it: it learns the toy task at the
same global batch of completions, writes snapshots saved across 2 devices, and a pause on two slots
resumes exactly (adapter to 1e-6), its KL reference kept."""

from __future__ import annotations

import pytest

from services.trainer_worker.engines.base import Restore
from services.trainer_worker.engines.distributed import run_distributed
from tests.shared.plans.plan_fixtures import amended
from tests.trainer_worker.doubles import RecordingReporter, adapter_tensors, max_abs_diff
from tests.trainer_worker.grpo_doubles import grpo_job, toy_answer, write_toy_dataset


def two_slot_job(model_dir, work_dir, dataset, **kw):
    job = grpo_job(model_dir, work_dir, dataset, **kw)
    job.devices, job.engine = ["cpu:0", "cpu:1"], "grpo-ddp"
    job.plan = amended(job.plan, {"execution": {"gpus": 2}})
    return job


@pytest.fixture(scope="module")
def toy(model_dir, tmp_path_factory):
    return write_toy_dataset(tmp_path_factory.mktemp("toy") / "toy.jsonl", toy_answer(model_dir)[0])


@pytest.fixture(scope="module")
def two_slots(model_dir, toy, tmp_path_factory):
    reporter = RecordingReporter()
    job = two_slot_job(model_dir, tmp_path_factory.mktemp("two"), toy, kl=0.1, maxSteps=6, every_steps=3)
    result = run_distributed(job, reporter)
    return job, reporter, result


def test_two_slots_learn_the_toy_task(two_slots):
    job, reporter, result = two_slots
    rewards = [p["reward"] for p in reporter.points]
    assert result.final_step == 6 and [p["step"] for p in reporter.points] == list(range(1, 7))
    assert rewards[0] < 0.4 and sum(rewards[-2:]) / 2 > 0.6, rewards
    assert reporter.points[0]["kl"] == pytest.approx(0.0, abs=1e-7) and reporter.points[-1]["kl"] > 0
    assert all(p["handoffBytes"] > 0 for p in reporter.points[1:])
    assert "2 prompt(s) x 8 completions per step" in reporter.what_trains()  # the plan's global batch
    assert [(s["step"], s["manifest"]["gpus"], s["manifest"]["engine"]) for s in reporter.snapshots] == [
        (3, 2, "grpo-ddp"), (6, 2, "grpo-ddp")]
    assert sorted(p.name for p in (job.work_dir / "rollouts").iterdir()) == ["rank-0", "rank-1"]


def test_rank_0_reports_one_sample_a_step_covering_both_ranks(two_slots):
    """Rank 0 alone reports samples (the other rank's reporter is silent), and its sample holds every
    rank's rollouts: TRL gathers them before logging, so both groups of the global batch are there and
    average to the step's reward."""
    _, reporter, _ = two_slots
    assert [s["step"] for s in reporter.samples_sent] == list(range(1, 7))
    for sample, point in zip(reporter.samples_sent, reporter.points):
        completions = [c for g in sample["groups"] for c in g["completions"]]
        assert sample["groupsInStep"] == 2 and sample["completionsInStep"] == 16 and len(completions) == 16
        assert sum(c["reward"] for c in completions) / 16 == pytest.approx(point["reward"])


def test_pause_on_two_slots_then_resume_on_two_continues_exactly(two_slots, model_dir, toy, tmp_path):
    _, full, _ = two_slots
    paused = RecordingReporter(stop_after_step=2, stop_with="pause")  # rank 0 sees it at the end of step 3
    first = two_slot_job(model_dir, tmp_path, toy, kl=0.1, maxSteps=6, every_steps=3)
    assert run_distributed(first, paused).paused and [s["step"] for s in paused.snapshots] == [3]
    resumed = RecordingReporter()
    second = two_slot_job(model_dir, tmp_path, toy, kl=0.1, maxSteps=6, every_steps=3,
                          restore=Restore("trainingState", paused.snapshot_at(3)))
    run_distributed(second, resumed)
    assert [p["step"] for p in resumed.points] == [4, 5, 6]
    assert [p["kl"] for p in resumed.points] == pytest.approx([p["kl"] for p in full.points[3:]], abs=1e-6)
    assert max_abs_diff(adapter_tensors(resumed.snapshot_at(6)), adapter_tensors(full.snapshot_at(6))) < 1e-6
