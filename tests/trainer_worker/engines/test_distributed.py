"""Training across two CPU slots of one node (SPEC 3.2): two real processes joined by gloo.

Why the 2-slot run may differ from the 1-slot run at the same global batch, and by how much:
both see the same 8 rows at each step (accelerate hands the first 4 of the 1-slot run's batch to
rank 0 and the next 4 to rank 1), and with `average_tokens_across_devices` each rank divides its
token-summed loss by the global token count, so the gradient is the same token mean over the same
rows. What differs is floating-point order: each rank pads its own 4 rows, sums its own tokens,
and gloo adds the two partial gradients. That is rounding at ~1e-7 relative per step, which Adam
carries forward (its update divides by sqrt(v), so tiny gradient differences still move weights).
Measured on this machine over 6 steps: losses equal to ~1e-7 relative, adapters within ~2e-6.
The tolerances (losses 1e-5 relative, adapter 1e-4 absolute) sit 50-100x above that, and well
below what a real mismatch gives: Adam moves each weight by up to the learning rate (2e-3) per
step whatever the gradient's size, so other rows, another global batch or a per-rank mean in place
of the global one shows as differences of that order.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from services.trainer_worker.engines import train
from services.trainer_worker.engines.base import Restore, read_manifest
from shared import reasons
from shared.errors import WorkFailed
from tests.trainer_worker.doubles import RecordingReporter, adapter_tensors, make_job, max_abs_diff

MAX_STEPS = 6
LOSS_REL_TOLERANCE = 1e-5
ADAPTER_TOLERANCE = 1e-4
EXACT = 1e-6


@pytest.fixture(scope="module")
def one_slot(model_dir, tmp_path_factory):
    reporter = RecordingReporter()
    train(make_job(model_dir, tmp_path_factory.mktemp("one"), maxSteps=MAX_STEPS, every_steps=3), reporter)
    return reporter


def test_two_slots_train_like_one_at_the_same_global_batch(one_slot, two_slots):
    _, two, result = two_slots
    assert result.final_step == MAX_STEPS and not result.stopped_early
    assert two.total_steps == MAX_STEPS and [p["step"] for p in two.points] == list(range(1, MAX_STEPS + 1))
    loss_rel = max(abs(a["loss"] - b["loss"]) / abs(a["loss"]) for a, b in zip(one_slot.points, two.points))
    diff = max_abs_diff(adapter_tensors(one_slot.snapshot_at(MAX_STEPS)), adapter_tensors(two.snapshot_at(MAX_STEPS)))
    print(f"1 vs 2 slots: losses within {loss_rel:.2g} relative, adapter max abs diff {diff:.3g}")
    assert loss_rel <= LOSS_REL_TOLERANCE
    assert diff <= ADAPTER_TOLERANCE
    assert any(message.startswith("training builtin/tiny-qwen3 on 256 rows on cpu:0, cpu:1, 4 row(s) per device per "
                                  "micro-batch, the loss over the assistant turns (") for _, message in two.events), two.events


def test_two_slots_write_the_same_snapshots_with_every_ranks_rng(two_slots):
    job, two, _ = two_slots
    assert [(s["step"], s["final"]) for s in two.snapshots] == [(3, False), (6, True)]
    manifest = read_manifest(two.snapshot_at(MAX_STEPS))
    assert manifest["gpus"] == 2 and manifest["engine"] == "sft-ddp" and manifest["layout"] == 2
    state = {p.name for p in (two.snapshot_at(MAX_STEPS) / "training_state").iterdir()}
    assert {"optimizer.pt", "scheduler.pt", "trainer_state.json", "rng_state_0.pth", "rng_state_1.pth"} <= state
    assert sorted(p.name for p in (two.snapshot_at(MAX_STEPS) / "adapter").iterdir()) == [
        "adapter_config.json", "adapter_model.safetensors",
    ]
    assert sorted(p.name for p in job.snapshots_dir.iterdir()) == ["step-000003", "step-000006"]


def test_pause_on_two_slots_then_resume_on_two_continues_exactly(two_slots, model_dir, tmp_path):
    _, uninterrupted, _ = two_slots
    paused = RecordingReporter(stop_after_step=3, stop_with="pause")  # rank 0 sees it at the end of step 4
    result = train(make_job(model_dir, tmp_path, maxSteps=MAX_STEPS, every_steps=3, devices=2), paused)
    assert result.paused and result.stopped_early and result.final_step == 4
    assert [(s["step"], s["final"]) for s in paused.snapshots] == [(3, False), (4, False)]
    assert read_manifest(paused.snapshot_at(4))["gpus"] == 2

    resumed = RecordingReporter()
    job = make_job(model_dir, tmp_path, maxSteps=MAX_STEPS, every_steps=3, devices=2,
                   restore=Restore("trainingState", paused.snapshot_at(4)))
    result = train(job, resumed)
    assert result.final_step == MAX_STEPS and [p["step"] for p in resumed.points] == [5, 6]
    diff = max_abs_diff(adapter_tensors(uninterrupted.snapshot_at(MAX_STEPS)), adapter_tensors(resumed.snapshot_at(MAX_STEPS)))
    print(f"2 slots, pause at 4 + resume: max abs diff {diff:.3g}")
    assert diff <= EXACT


def test_a_two_slot_training_state_does_not_resume_on_one(two_slots, model_dir, tmp_path):
    _, two, _ = two_slots
    job = make_job(model_dir, tmp_path, restore=Restore("trainingState", two.snapshot_at(3)))
    with pytest.raises(WorkFailed) as refused:
        train(job, RecordingReporter())
    assert str(refused.value) == reasons.training_state_gpu_mismatch(saved_gpus=2, run_gpus=1)


def _rank_pids() -> dict[int, int]:
    """RANK -> pid of this process's rank children, read from /proc (Linux)."""
    ranks = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            environ = (entry / "environ").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid():
            for item in environ:
                if item.startswith(b"RANK="):
                    ranks[int(item[5:])] = int(entry.name)
    return ranks


class KillsRankOne(RecordingReporter):
    """Kills rank 1 with SIGKILL (a rank lost to the OOM killer, say) when step 2's metrics arrive."""

    def metrics(self, point: dict) -> None:
        super().metrics(point)
        if point["step"] == 2:
            self.pids = _rank_pids()
            os.kill(self.pids[1], signal.SIGKILL)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the rank processes through /proc")
def test_a_failed_rank_fails_the_run_naming_it_and_leaves_no_rank_running(model_dir, tmp_path):
    reporter = KillsRankOne()
    with pytest.raises(WorkFailed) as failed:
        train(make_job(model_dir, tmp_path, maxSteps=200, every_steps=None, devices=2), reporter)
    assert str(failed.value) == reasons.rank_failed(rank=1, world=2, how="was killed by SIGKILL")
    assert str(failed.value) == "rank 1 of 2 was killed by SIGKILL; the other ranks were stopped"
    assert set(reporter.pids) == {0, 1}
    assert _rank_pids() == {}  # rank 0 was stopped and reaped
    for pid in reporter.pids.values():
        assert not Path(f"/proc/{pid}").exists()


def test_a_rank_that_raises_fails_the_run_with_its_error(model_dir, tmp_path):
    job = make_job(model_dir, tmp_path, devices=2, dataset=tmp_path / "missing.jsonl")
    with pytest.raises(WorkFailed) as failed:
        train(job, RecordingReporter())
    message = str(failed.value)
    assert message.startswith("rank 0 of 2 failed with exit code 1: [Errno 2] No such file or directory: ")
    assert "missing.jsonl" in message and message.endswith("; the other ranks were stopped")
    assert _rank_pids() == {}


def test_every_rank_measures_its_own_peak_and_rank_0_reports_them_all(one_slot, two_slots):
    _, two, _ = two_slots
    for reporter, ranks in ((one_slot, [0]), (two, [0, 1])):
        estimate, peaks = reporter.memory_reports
        assert [r["rank"] for r in peaks["ranks"]] == ranks
        assert all(r["peakGiB"] > 0.1 for r in peaks["ranks"])  # each a training process's peak resident set
        assert estimate["estimate_gib"] >= max(r["peakGiB"] for r in peaks["ranks"])
