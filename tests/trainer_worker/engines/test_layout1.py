"""Snapshots written by release 0.5 (layout 1, SPEC 3.3) restore: their weights from
adapter_model.bin or .safetensors, and their training state continuing exactly."""

from __future__ import annotations

import json

import pytest

from services.trainer_worker.engines.base import Restore, read_manifest, readable_parts
from services.trainer_worker.engines.sft import run_sft
from shared.tiny_models import SAMPLE_DATASET
from tests.shared.plan_fixtures import amended
from tests.trainer_worker.doubles import PLAN, RecordingReporter, adapter_tensors, make_job, max_abs_diff
from tests.trainer_worker.layout1 import as_bin_variant, make_layout1_snapshot

MAX_STEPS = 14
STEP = 8
EXACT = 1e-6


def layout1_job(model_dir, work_dir, **kw):
    job = make_job(model_dir, work_dir, maxSteps=MAX_STEPS, warmupSteps=2, every_steps=None, **kw)
    # release 0.5 trained chat rows on every token; a run that continues its training state exactly
    # takes its loss over the same tokens
    job.plan = amended(job.plan, {"adapter": {"dropout": 0.1}, "hyperparameters": {"trainOnPrompt": True}})
    return job


@pytest.fixture(scope="module")
def snapshots(model_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("layout1")
    plan = layout1_job(model_dir, root).plan.to_dict()
    safetensors = make_layout1_snapshot(model_dir, SAMPLE_DATASET, root / "v05-safetensors", plan=plan, step=STEP)
    return {"safetensors": safetensors, "bin": as_bin_variant(safetensors, root / "v05-bin")}


@pytest.fixture(scope="module")
def uninterrupted(model_dir, tmp_path_factory):
    """The parent as if it had never stopped: trained the way release 0.5 scheduled it (transformers'
    warmup, step 1 at rate 0; engines/lr_schedule.py keeps that schedule for a layout-1 training state)."""
    from services.trainer_worker.engines import sft

    reporter = RecordingReporter()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sft, "warm_up_from_the_first_step", lambda trainer, restored=None: trainer)
        run_sft(layout1_job(model_dir, tmp_path_factory.mktemp("full")), reporter)
    assert reporter.points[0]["learningRate"] == 0.0  # release 0.5's first warmup step
    return reporter


def test_the_generator_writes_what_release_0_5_wrote(snapshots):
    assert {p.name for p in snapshots["safetensors"].iterdir()} >= {
        "adapter_config.json", "adapter_model.safetensors", "optimizer.pt", "scheduler.pt",
        "trainer_state.json", "rng_state.pth", "snapshot.json",
    }
    assert (snapshots["bin"] / "adapter_model.bin").is_file()
    assert not (snapshots["bin"] / "adapter_model.safetensors").exists()
    assert json.loads((snapshots["bin"] / "snapshot.json").read_text()) == {
        "layout": 1, "model": PLAN["model"], "method": "sft", "step": STEP, "gpus": 1, "precision": "fp32",
    }


@pytest.mark.parametrize("variant, weights_format", [("safetensors", "peft-safetensors"), ("bin", "peft-bin")])
def test_both_parts_of_a_layout1_snapshot_are_readable(snapshots, variant, weights_format):
    manifest = read_manifest(snapshots[variant])
    assert manifest["layout"] == 1 and manifest["weights"]["format"] == weights_format
    assert manifest["trainingState"] == {"format": "hf-trainer", "path": "."}
    assert readable_parts(manifest) == {"weights": True, "trainingState": True}


def test_a_layout1_snapshot_without_optimizer_has_only_weights(snapshots, tmp_path):
    import shutil

    copy_dir = shutil.copytree(snapshots["safetensors"], tmp_path / "weights-only")
    (copy_dir / "optimizer.pt").unlink()
    assert readable_parts(read_manifest(copy_dir)) == {"weights": True, "trainingState": False}


def test_a_layout1_snapshot_without_its_random_state_has_only_weights(snapshots, tmp_path):
    """Without rng_state*.pth a resume would draw other batches: not the exact continuation a
    trainingState restore promises (SPEC 3.3 lists rng_state.pth among the layout-1 files)."""
    import shutil

    copy_dir = shutil.copytree(snapshots["safetensors"], tmp_path / "no-rng")
    (copy_dir / "rng_state.pth").rename(copy_dir / "rng_state_0.pth")  # as a 2-process run names it
    assert readable_parts(read_manifest(copy_dir)) == {"weights": True, "trainingState": True}
    (copy_dir / "rng_state_0.pth").unlink()
    assert readable_parts(read_manifest(copy_dir)) == {"weights": True, "trainingState": False}


@pytest.mark.parametrize("variant", ["safetensors", "bin"])
def test_a_training_state_branch_from_layout1_continues_exactly(snapshots, uninterrupted, model_dir, tmp_path, variant):
    branch = RecordingReporter()
    result = run_sft(layout1_job(model_dir, tmp_path, restore=Restore("trainingState", snapshots[variant])), branch)
    assert result.final_step == MAX_STEPS and [p["step"] for p in branch.points] == list(range(STEP + 1, MAX_STEPS + 1))
    for ours, theirs in zip(branch.points, uninterrupted.points[STEP:]):
        assert ours["loss"] == pytest.approx(theirs["loss"], abs=1e-6)
    final = branch.snapshot_at(MAX_STEPS)
    assert read_manifest(final)["layout"] == 2  # what it writes is the current layout
    diff = max_abs_diff(adapter_tensors(uninterrupted.snapshot_at(MAX_STEPS)), adapter_tensors(final))
    print(f"layout-1 ({variant}) trainingState branch: max abs diff {diff:.3g}")
    assert diff <= EXACT


def test_weights_branches_from_bin_and_safetensors_start_from_the_same_adapter(snapshots, model_dir, tmp_path):
    fresh = RecordingReporter()
    run_sft(make_job(model_dir, tmp_path / "fresh", maxSteps=2, every_steps=None), fresh)
    finals = {}
    for variant in ("safetensors", "bin"):
        branch = RecordingReporter()
        job = make_job(model_dir, tmp_path / variant, maxSteps=2, every_steps=None,
                       restore=Restore("weights", snapshots[variant]))
        job.plan = amended(job.plan, {"adapter": {"dropout": 0.1}})
        result = run_sft(job, branch)
        assert result.final_step == 2 and [p["step"] for p in branch.points] == [1, 2]
        assert branch.points[0]["loss"] < fresh.points[0]["loss"] - 0.3  # it starts trained
        assert not [m for level, m in branch.events if level == "warn"]
        finals[variant] = adapter_tensors(branch.snapshot_at(2))
    assert max_abs_diff(finals["safetensors"], finals["bin"]) <= EXACT
