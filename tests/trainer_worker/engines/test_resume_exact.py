"""Restores on one device (SPEC 2.4, 3.3): a trainingState branch and a pause + resume end with the
adapter of the run that never stopped (to 1e-6 on CPU); a weights branch starts over an inherited
adapter with a fresh optimizer and schedule.

The uninterrupted run uses LoRA dropout and warmup, so the restored RNG and LR schedule matter, and
crosses an epoch boundary (256 rows / 8 = 32 steps an epoch), so the restored data position does.
"""

from __future__ import annotations

import json

import pytest
import torch

from services.trainer_worker.engines.base import Restore, TrainingResult, read_manifest, readable_parts
from services.trainer_worker.engines.sft import run_sft
from shared import reasons
from tests.shared.plan_fixtures import amended
from shared.errors import WorkFailed
from tests.trainer_worker.doubles import RecordingReporter, adapter_tensors, make_job, max_abs_diff

MAX_STEPS = 36
EXACT = 1e-6  # SPEC 2.4: on CPU, the same adapter to 1e-6


def exact_job(model_dir, work_dir, **kw):
    job = make_job(model_dir, work_dir, maxSteps=MAX_STEPS, warmupSteps=3, **kw)
    job.plan = amended(job.plan, {"adapter": {"dropout": 0.1}})
    return job


@pytest.fixture(scope="module")
def uninterrupted(model_dir, tmp_path_factory):
    reporter = RecordingReporter()
    result = run_sft(exact_job(model_dir, tmp_path_factory.mktemp("full")), reporter)
    assert [s["step"] for s in reporter.snapshots] == [10, 20, 30, 36]
    return reporter, result


@pytest.mark.parametrize("step", [10, 30])  # within the first epoch; across the epoch boundary
def test_a_training_state_branch_ends_with_the_uninterrupted_adapter(uninterrupted, model_dir, tmp_path, step):
    parent, _ = uninterrupted
    branch = RecordingReporter()
    job = exact_job(model_dir, tmp_path, run_id="run-branch",
                    restore=Restore("trainingState", parent.snapshot_at(step)))
    result = run_sft(job, branch)

    assert result == TrainingResult(final_step=MAX_STEPS, first_loss=branch.points[0]["loss"],
                                    last_loss=branch.points[-1]["loss"], stopped_early=False, start_step=step)
    assert branch.total_steps == MAX_STEPS
    assert [p["step"] for p in branch.points] == list(range(step + 1, MAX_STEPS + 1))
    for ours, theirs in zip(branch.points, parent.points[step:]):
        assert ours["loss"] == theirs["loss"] and ours["learningRate"] == theirs["learningRate"]
    diff = max_abs_diff(adapter_tensors(parent.snapshot_at(MAX_STEPS)), adapter_tensors(branch.snapshot_at(MAX_STEPS)))
    print(f"trainingState branch from step {step}: max abs diff {diff:.3g}")
    assert diff <= EXACT
    assert any(f"continuing the training state of step {step}" in m for _, m in branch.events)


def test_pause_writes_a_training_state_snapshot_and_resume_continues_exactly(uninterrupted, model_dir, tmp_path):
    parent, _ = uninterrupted
    paused = RecordingReporter(stop_after_step=13, stop_with="pause")  # seen at the end of step 14
    job = exact_job(model_dir, tmp_path)
    result = run_sft(job, paused)

    assert result.paused and result.stopped_early and result.final_step == 14
    assert [(s["step"], s["final"]) for s in paused.snapshots] == [(10, False), (14, False)]
    manifest = read_manifest(paused.snapshot_at(14))
    assert manifest["step"] == 14 and readable_parts(manifest) == {"weights": True, "trainingState": True}
    state = json.loads((paused.snapshot_at(14) / "training_state" / "trainer_state.json").read_text())
    assert state["global_step"] == 14
    assert ("info", "pausing at step 14: writing a snapshot with training state") in paused.events

    # The run resumes itself: same run id, same work dir, its latest snapshot.
    resumed = RecordingReporter()
    job = exact_job(model_dir, tmp_path, restore=Restore("trainingState", paused.snapshot_at(14)))
    result = run_sft(job, resumed)
    assert not result.paused and not result.stopped_early and result.final_step == MAX_STEPS
    assert [p["step"] for p in resumed.points] == list(range(15, MAX_STEPS + 1))
    assert [(s["step"], s["final"]) for s in resumed.snapshots] == [(20, False), (30, False), (36, True)]
    diff = max_abs_diff(adapter_tensors(parent.snapshot_at(MAX_STEPS)), adapter_tensors(resumed.snapshot_at(MAX_STEPS)))
    print(f"pause at 14 + resume: max abs diff {diff:.3g}")
    assert diff <= EXACT


def test_a_weights_branch_trains_over_the_inherited_adapter_with_a_fresh_optimizer(uninterrupted, model_dir, tmp_path):
    parent, _ = uninterrupted
    fresh = RecordingReporter()
    run_sft(make_job(model_dir, tmp_path / "fresh", maxSteps=3), fresh)
    branch = RecordingReporter()
    job = make_job(model_dir, tmp_path / "branch", maxSteps=3, restore=Restore("weights", parent.snapshot_at(30)))
    job.plan = amended(job.plan, {"adapter": {"rank": 4, "dropout": 0.1}})  # the inherited adapter: rank 8, dropout 0.1
    result = run_sft(job, branch)

    assert result.final_step == 3 and [p["step"] for p in branch.points] == [1, 2, 3]  # its own step counter
    assert branch.points[0]["learningRate"] == pytest.approx(0.002)  # a fresh schedule, no warmup here
    # Same first batch as a fresh adapter, but it starts from the parent's trained adapter.
    assert branch.points[0]["loss"] < fresh.points[0]["loss"] - 1.0
    late = sum(p["loss"] for p in parent.points[25:30]) / 5  # one batch's answer tokens are few: a mean
    assert abs(branch.points[0]["loss"] - late) < abs(branch.points[0]["loss"] - fresh.points[0]["loss"])
    assert ("warn", "the plan's adapter settings differ from the inherited adapter's (rank 4 planned, 8 inherited): "
                    "training uses the inherited adapter's config") in branch.events
    adapter = adapter_tensors(branch.snapshot_at(3))
    assert all(t.shape[0] == 8 for k, t in adapter.items() if "lora_A" in k)  # the inherited rank
    state = json.loads((branch.snapshot_at(3) / "training_state" / "trainer_state.json").read_text())
    assert state["global_step"] == 3
    inherited = adapter_tensors(parent.snapshot_at(30))
    assert 0 < max_abs_diff(inherited, adapter) < 0.05  # three small steps away from it


def test_a_restore_this_job_cannot_take_is_refused_with_the_users_sentence(uninterrupted, model_dir, tmp_path):
    parent, _ = uninterrupted
    job = make_job(model_dir, tmp_path, devices=2, restore=Restore("trainingState", parent.snapshot_at(10)))
    with pytest.raises(WorkFailed) as refused:
        run_sft(job, RecordingReporter())
    assert str(refused.value) == reasons.training_state_gpu_mismatch(saved_gpus=1, run_gpus=2)


def test_manifest_parts_and_what_this_deployment_reads(uninterrupted, tmp_path):
    from shared.errors import ValidationFailed

    parent, _ = uninterrupted
    manifest = read_manifest(parent.snapshot_at(10))
    assert readable_parts(manifest) == {"weights": True, "trainingState": True}
    assert readable_parts({**manifest, "trainingState": None}) == {"weights": True, "trainingState": False}
    assert readable_parts({**manifest, "trainingState": {"format": "deepspeed-zero3", "path": "ds"}}) == {
        "weights": True, "trainingState": False,
    }
    assert readable_parts({**manifest, "weights": {"format": "megatron"}}) == {"weights": False, "trainingState": False}
    assert readable_parts({**manifest, "layout": 3}) == {"weights": False, "trainingState": False}
    (tmp_path / "snapshot.json").write_text(json.dumps({"layout": 2, "model": "m"}))
    with pytest.raises(ValidationFailed, match="lacks method, step, gpus, precision"):
        read_manifest(tmp_path)
    with pytest.raises(ValidationFailed, match="holds no snapshot.json"):
        read_manifest(tmp_path / "nowhere")


def test_tensors_are_compared_over_every_key():
    with pytest.raises(AssertionError):
        max_abs_diff({"a": torch.zeros(1)}, {"b": torch.zeros(1)})
