"""Where a re-queued or resumed run starts (run_job.restore_for) when its snapshots are damaged
(issue 14): the newest intact one with training state, a warn event naming what was passed over, or
a failure naming the snapshot and the file before any model is loaded. Real Redis and real files;
the reporter is a list that keeps its events (the real one writes them to the run's event log)."""

from __future__ import annotations

import pytest

from services.trainer_worker.engines.base import Restore
from services.trainer_worker.node_worker import Worker
from services.trainer_worker.run_job import restore_for
from shared import reasons
from shared.errors import WorkFailed
from shared.snapshots.files import record
from tests.shared.plans.plan_fixtures import typed

STATE = {"weights": {"format": "peft-safetensors", "path": "adapter"},
         "trainingState": {"format": "hf-trainer", "path": "training_state"}}


class Events:
    def __init__(self):
        self.seen: list[tuple[str, str]] = []

    def event(self, message: str, level: str = "info") -> None:
        self.seen.append((level, message))


@pytest.fixture
def worker(config):
    worker = Worker(config, "local")
    yield worker
    worker.redis.close()


def snapshot(worker, run_id: str, step: int, *, contents=STATE) -> dict:
    path = f"runs/{run_id}/snapshots/step-{step}"
    directory = worker.artifacts.root / path
    for name, body in (("adapter/adapter_config.json", b"{}"), ("adapter/adapter_model.safetensors", b"w" * 64),
                       ("training_state/optimizer.pt", b"o" * 32), ("training_state/trainer_state.json", b"{}")):
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_bytes(body)
    return worker.store.create({
        "id": f"snap-{run_id}-{step}", "kind": "snapshot", "run": run_id, "workload": "runs", "step": step,
        "layout": 2, "contents": contents, "files": record(directory), "path": path, "model": "builtin/tiny-qwen3"})


def run_with(snapshots: list[dict], restore=None) -> dict:
    return {"id": "run-r", "snapshots": [s["id"] for s in snapshots],
            "latestSnapshot": snapshots[-1]["id"] if snapshots else None, "plan": typed({"restore": restore}).to_dict()}


def test_the_newest_intact_snapshot_is_resumed_without_a_word(worker):
    snaps = [snapshot(worker, "run-r", step) for step in (5, 10)]
    events = Events()
    assert restore_for(worker, run_with(snaps), events) == Restore(
        what="trainingState", snapshot_dir=worker.artifacts.root / snaps[1]["path"])
    assert events.seen == []


def test_a_damaged_newest_snapshot_falls_back_to_an_older_one_with_a_warn_event(worker):
    snaps = [snapshot(worker, "run-r", step) for step in (5, 10, 15)]
    (worker.artifacts.root / snaps[2]["path"] / "training_state" / "optimizer.pt").write_bytes(b"o" * 3)
    (worker.artifacts.root / snaps[1]["path"] / "adapter" / "adapter_model.safetensors").unlink()
    events = Events()
    assert restore_for(worker, run_with(snaps), events) == Restore(
        what="trainingState", snapshot_dir=worker.artifacts.root / snaps[0]["path"])
    assert events.seen == [("warn", reasons.snapshot_resumed_from_older(
        snaps[2]["id"], "training_state/optimizer.pt", "has 3 bytes; the snapshot recorded 32 bytes",
        snaps[0]["id"], 5))]
    assert events.seen[0][1] == (
        f"snapshot {snaps[2]['id']} is damaged (its file training_state/optimizer.pt has 3 bytes; the snapshot "
        f"recorded 32 bytes); resuming from {snaps[0]['id']} (step 5), the newest intact snapshot with training state")


def test_with_no_intact_snapshot_of_its_own_the_run_fails_naming_the_newest(worker):
    snaps = [snapshot(worker, "run-r", step) for step in (5, 10)]
    for snap in snaps:
        (worker.artifacts.root / snap["path"] / "adapter" / "adapter_model.safetensors").write_bytes(b"")
    with pytest.raises(WorkFailed) as failed:
        restore_for(worker, run_with(snaps), Events())
    assert str(failed.value) == reasons.snapshot_damaged(
        snaps[1]["id"], "adapter/adapter_model.safetensors", "has 0 bytes; the snapshot recorded 64 bytes")


def test_snapshots_without_training_state_are_not_resume_points(worker):
    weights_only = snapshot(worker, "run-r", 5, contents={**STATE, "trainingState": None})
    assert restore_for(worker, run_with([weights_only]), Events()) is None


def test_a_damaged_branch_source_fails_the_run_before_it_loads_anything(worker):
    parent = snapshot(worker, "run-p", 8)
    (worker.artifacts.root / parent["path"] / "adapter" / "adapter_model.safetensors").write_bytes(b"x" * 64)
    run = run_with([], restore={"snapshot": parent["id"], "what": "weights"})
    with pytest.raises(WorkFailed) as failed:
        restore_for(worker, run, Events())
    assert str(failed.value) == reasons.snapshot_damaged(
        parent["id"], "adapter/adapter_model.safetensors", "is not the file the snapshot recorded (its sha256 differs)")
    # only the weights of a weights branch are read: a damaged optimizer does not stop it
    (worker.artifacts.root / parent["path"] / "adapter" / "adapter_model.safetensors").write_bytes(b"w" * 64)
    (worker.artifacts.root / parent["path"] / "training_state" / "optimizer.pt").write_bytes(b"")
    assert restore_for(worker, run, Events()).what == "weights"
