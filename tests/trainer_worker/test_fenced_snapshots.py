"""A stale holder cannot overwrite or register a snapshot (issue 27, item 5): real Redis, the real
reporter and lease, snapshot directories published through the real artifact store.

The scene: the run's first holder (attempt 0) is frozen mid-save; its run is given back (a new
fence, attempts 1) and its new holder publishes and registers step 30; the first holder wakes and
finishes its own save of step 30."""
# ruff: noqa: F811  (the claim fixtures are imported by name, then asked for as arguments)

from __future__ import annotations

import pytest
import structlog

from services.trainer_worker.lease import Lease, LeaseLost
from services.trainer_worker.reporter import RunReporter
from shared.lifecycle.states import RunStatus
from shared.store.artifacts import ArtifactRoot, join, run_snapshots_key
from shared.store.ids import Kind, new_id
from tests.claim_fixtures import keys, prefix, redis_client, store  # noqa: F401  (fixtures)

MANIFEST = {"layout": 2, "gpus": 1, "method": "sft", "engine": "sft-single", "precision": "fp32",
            "model": "builtin/tiny-qwen3", "weights": {"path": "adapter"}, "trainingState": None}


def holder(store, artifacts, run_id: str, name: str) -> RunReporter:
    lease = Lease(store.redis, store.keys, run_id, f"{name}/host/1")
    assert lease.acquire()
    run = store.update(run_id, lambda doc: {**doc, "fence": lease.fence})
    return RunReporter(store=store, artifacts=artifacts, run=run, lease=lease, log=structlog.get_logger())


def publish(artifacts: ArtifactRoot, tmp_path, run_id: str, attempt: int, step: int, content: bytes) -> str:
    source = tmp_path / f"staging-{attempt}-{step}"
    (source / "adapter").mkdir(parents=True)
    (source / "adapter" / "adapter_model.safetensors").write_bytes(content)
    return artifacts.put_dir(source, join(run_snapshots_key(run_id, attempt), f"step-{step:06d}"), move=True)


def test_a_stale_holder_neither_replaces_nor_registers_a_snapshot(store, tmp_path):
    artifacts = ArtifactRoot(tmp_path / "artifacts")
    run_id = store.create({"id": new_id(Kind.RUN), "kind": "run", "status": RunStatus.RUNNING.value,
                           "workload": "runs", "progress": {"step": 0}, "scheduling": {}, "fence": None,
                           "attempts": 0, "snapshots": []})["id"]
    stale = holder(store, artifacts, run_id, "node-a")
    key20 = publish(artifacts, tmp_path, run_id, 0, 20, b"attempt 0, step 20")
    stale.snapshot(step=20, key=key20, directory=artifacts.get_dir(key20), manifest=MANIFEST, final=False)
    step20 = store.get(run_id)["latestSnapshot"]

    # Its node stopped answering: the scheduler gave the run back (a new fence, attempts + 1), and the
    # lease was dropped; the run's new holder on node-b resumes from step 20 and saves step 30.
    fence = int(store.redis.incr(store.keys.fence(run_id)))
    store.update(run_id, lambda doc: {**doc, "fence": fence, "attempts": 1})
    store.redis.delete(store.keys.lease(run_id))
    new = holder(store, artifacts, run_id, "node-b")
    new_key = publish(artifacts, tmp_path, run_id, 1, 30, b"attempt 1, step 30")
    new.snapshot(step=30, key=new_key, directory=artifacts.get_dir(new_key), manifest=MANIFEST, final=False)
    registered = store.get(run_id)

    # The frozen holder wakes mid-save: it publishes its own step 30 and tries to register it.
    stale_key = publish(artifacts, tmp_path, run_id, 0, 30, b"attempt 0, step 30")
    assert stale_key != new_key  # each attempt publishes under keys of its own
    with pytest.raises(LeaseLost, match=f"run {run_id} now belongs to fence {fence + 1}"):
        stale.snapshot(step=30, key=stale_key, directory=artifacts.get_dir(stale_key), manifest=MANIFEST,
                       final=False)

    after = store.get(run_id)
    assert (after["snapshots"], after["latestSnapshot"]) == (registered["snapshots"], registered["latestSnapshot"])
    assert [step20, registered["latestSnapshot"]] == after["snapshots"]
    index = store.redis.zrange(store.keys.snapshots_of(run_id), 0, -1, withscores=True)
    assert index == [(step20, 20.0), (registered["latestSnapshot"], 30.0)]  # nothing of the stale save
    snapshots, _ = store.list("snap", limit=10)
    assert sorted(s["path"] for s in snapshots) == sorted([key20, new_key])
    assert (artifacts.get_dir(new_key) / "adapter" / "adapter_model.safetensors").read_bytes() == b"attempt 1, step 30"
    assert not artifacts.exists(stale_key)  # it removed what it had published


def test_each_attempt_works_and_publishes_under_keys_of_its_own():
    from shared.store.artifacts import run_work_key

    assert (run_work_key("run-1", 0), run_snapshots_key("run-1", 0)) == ("runs/run-1", "runs/run-1/snapshots")
    assert (run_work_key("run-1", 2), run_snapshots_key("run-1", 2)) == (
        "runs/run-1/attempt-2", "runs/run-1/snapshots/attempt-2")
