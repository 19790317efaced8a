"""The sharded engine (sft-fsdp: FSDP2 through accelerate) on two CPU slots joined by gloo.

Against DDP at the same global batch (the session's `two_slots` run): each rank computes the same
rows' forward and backward with the whole layer gathered, and the gradient of each adapter shard is
reduce-scattered instead of all-reduced, so only the order of floating-point additions differs.
Measured on this machine over 6 steps: identical losses, adapters within 7.5e-9. The tolerance
(1e-5, DDP's own against one slot is 1e-4) is three orders of magnitude above that and far below a
real difference (Adam moves a weight by up to the learning rate, 2e-3, per step).

Exact continuation: a trainingState branch of the step-3 snapshot (how a paused or lost run resumes
too) reads the sharded DCP checkpoint back into the shards and must end where the run did (1e-6).
"""

from __future__ import annotations

import pytest

from services.trainer_worker.engines import train
from services.trainer_worker.engines.base import Restore, read_manifest
from shared import reasons
from shared.errors import WorkFailed
from shared.snapshots.manifest import SHARDED_TRAINING_STATE_FORMAT, readable_parts
from tests.trainer_worker.doubles import RecordingReporter, adapter_tensors, make_job, max_abs_diff

MAX_STEPS = 6
SAME_AS_DDP = 1e-5
EXACT = 1e-6


@pytest.fixture(scope="module")
def sharded(model_dir, tmp_path_factory):
    reporter = RecordingReporter()
    job = make_job(model_dir, tmp_path_factory.mktemp("fsdp"), maxSteps=MAX_STEPS, every_steps=3, devices=2,
                   engine="sft-fsdp")
    return job, reporter, train(job, reporter)


def test_the_sharded_engine_trains_the_adapter_ddp_trains(sharded, two_slots):
    _, fsdp, result = sharded
    _, ddp, _ = two_slots
    assert result.final_step == MAX_STEPS and [p["step"] for p in fsdp.points] == list(range(1, MAX_STEPS + 1))
    loss_rel = max(abs(a["loss"] - b["loss"]) / abs(a["loss"]) for a, b in zip(ddp.points, fsdp.points))
    diff = max_abs_diff(adapter_tensors(ddp.snapshot_at(MAX_STEPS)), adapter_tensors(fsdp.snapshot_at(MAX_STEPS)))
    print(f"sft-ddp vs sft-fsdp on 2 slots: losses within {loss_rel:.2g} relative, adapter max abs diff {diff:.3g}")
    assert loss_rel <= SAME_AS_DDP and diff <= SAME_AS_DDP


def test_its_snapshots_record_a_sharded_distributed_checkpoint(sharded):
    _, fsdp, _ = sharded
    assert [(s["step"], s["final"]) for s in fsdp.snapshots] == [(3, False), (6, True)]
    snapshot = fsdp.snapshot_at(MAX_STEPS)
    manifest = read_manifest(snapshot)
    assert manifest["engine"] == "sft-fsdp" and manifest["gpus"] == 2
    assert manifest["trainingState"] == {"format": SHARDED_TRAINING_STATE_FORMAT, "path": "training_state"}
    assert SHARDED_TRAINING_STATE_FORMAT == "hf-trainer-fsdp2-dcp"
    assert readable_parts(manifest) == {"weights": True, "trainingState": True}
    state = snapshot / "training_state"
    for dcp in ("pytorch_model_fsdp_0", "optimizer_0"):  # one shard file per rank and DCP's metadata
        assert sorted(p.name for p in (state / dcp).iterdir()) == [".metadata", "__0_0.distcp", "__1_0.distcp"]
    assert {"scheduler.pt", "trainer_state.json", "rng_state_0.pth", "rng_state_1.pth"} <= {
        p.name for p in state.iterdir()}
    assert not (state / "optimizer.pt").exists()
    assert sorted(p.name for p in (snapshot / "adapter").iterdir()) == [
        "adapter_config.json", "adapter_model.safetensors"]


def test_a_training_state_branch_continues_exactly(sharded, model_dir, tmp_path):
    _, fsdp, _ = sharded
    branch = RecordingReporter()
    job = make_job(model_dir, tmp_path, maxSteps=MAX_STEPS, every_steps=3, devices=2, engine="sft-fsdp",
                   restore=Restore("trainingState", fsdp.snapshot_at(3)))
    result = train(job, branch)
    assert result.final_step == MAX_STEPS and [p["step"] for p in branch.points] == [4, 5, 6]
    diff = max_abs_diff(adapter_tensors(fsdp.snapshot_at(MAX_STEPS)), adapter_tensors(branch.snapshot_at(MAX_STEPS)))
    print(f"sft-fsdp, trainingState branch of step 3: max abs diff {diff:.3g}")
    assert diff <= EXACT
    assert [p["loss"] for p in branch.points] == [p["loss"] for p in fsdp.points[3:]]


def test_its_training_state_resumes_only_on_the_gpu_count_it_was_saved_on(sharded, model_dir, tmp_path):
    _, fsdp, _ = sharded
    for gpus in (1, 4):
        job = make_job(model_dir, tmp_path, devices=gpus, engine="sft-fsdp" if gpus > 1 else None,
                       restore=Restore("trainingState", fsdp.snapshot_at(3)))
        with pytest.raises(WorkFailed) as refused:
            train(job, RecordingReporter())
        assert str(refused.value) == reasons.training_state_gpu_mismatch(saved_gpus=2, run_gpus=gpus)
        assert str(refused.value) == (f"this snapshot's training state was saved across 2 GPU(s), and this run "
                                      f"trains on {gpus}. Restore its weights instead")
