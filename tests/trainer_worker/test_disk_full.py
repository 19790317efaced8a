"""A run whose snapshot meets a full disk (issue 26): PAUSED with the reason, not FAILED; the
half-written snapshot removed and the earlier one intact; once space is freed, `runs resume`
continues it from that snapshot to SUCCEEDED.

Everything is real: the artifact root is a tmpfs of the test's own (tests/conftest.small_disk), the
API takes the dataset and the run, the scheduler's grant and dispatch queue it (its Celery is a
recorder: the test runs the task itself, as the worker's Celery task does, `leased_work.execute`),
and the tiny model trains for real. The disk fills at a chosen moment: right after the first
snapshot is registered, a file takes every byte left (`fill_disk`), so the second snapshot's first
write (the adapter, by safetensors) meets ENOSPC. A writer that fails without saying why
(torch.save) is covered in tests/shared/process/test_disk_full.py.
"""

from __future__ import annotations

import io
import json
import time

import pytest

from services.api.app import create_app
from services.scheduler.dispatch import dispatch_granted
from services.trainer_worker import leased_work
from services.trainer_worker.node_worker import Worker
from services.trainer_worker.reporter import RunReporter
from shared import reasons
from shared.claims.queue import ClaimQueue
from shared.snapshots.files import damage_of
from tests.conftest import ADMIN_TOKEN, fill_disk, make_config, mark_nodes_alive

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
ROWS = b"\n".join(json.dumps({"messages": [{"role": "user", "content": f"q{i}"},
                                           {"role": "assistant", "content": f"a{i}"}]}).encode() for i in range(8))


class _Celery:
    """The scheduler's Celery, recording what it would send; the test runs the task itself."""

    def __init__(self):
        self.sent: list[list] = []

    def send_task(self, name, args, queue, task_id):
        self.sent.append(args)


def grant_and_take(app, config, worker, run_id: str) -> str:
    """The scheduler's pass for the run's claim, then the worker's task for it; its outcome."""
    context = app.extensions["trainer"]
    queue = ClaimQueue(context.redis, context.keys, config=config)
    queue.grant_pass(config, "default")
    celery = _Celery()
    dispatch_granted(queue=queue, store=context.store, celery_app=celery, config=config)
    [(kind, resource, claim)] = [args for args in celery.sent if args[1] == run_id]
    return leased_work.execute(worker, kind, resource, claim)


def test_a_snapshot_that_meets_a_full_disk_pauses_the_run_which_resumes_once_space_is_freed(
        small_disk, redis_url, key_prefix, monkeypatch):
    root = small_disk(24)
    config = make_config(redis_url, key_prefix, root)
    app = create_app(config)
    client = app.test_client()
    worker = Worker(config, "local")
    mark_nodes_alive(worker.redis, worker.keys, config)
    dataset = client.post("/v1/datasets", headers=ADMIN, data={"file": (io.BytesIO(ROWS), "d.jsonl")},
                          content_type="multipart/form-data").json["id"]
    resp = client.post("/v1/runs", headers=ADMIN, json={
        "model": "builtin/tiny-qwen3", "dataset": dataset, "snapshots": {"everySteps": 2},
        "hyperparameters": {"maxSteps": 4, "batchSize": 2, "maxSeqLength": 32}})
    assert resp.status_code == 201, resp.json
    run_id = resp.json["id"]

    filled = []
    publish = RunReporter.snapshot

    def snapshot_then_fill_the_disk(self, **kwargs):
        publish(self, **kwargs)
        if not filled:
            filled.append(fill_disk(root))

    monkeypatch.setattr(RunReporter, "snapshot", snapshot_then_fill_the_disk)
    assert grant_and_take(app, config, worker, run_id) == "PAUSED"

    run = client.get(f"/v1/runs/{run_id}", headers=ADMIN).json
    assert run["status"] == "PAUSED" and run["detail"] == reasons.run_paused_disk_full(4)
    assert run["detail"] == (
        "paused: the snapshot of step 4 could not be written because the disk is full (no space left where the "
        "trainer stores artifacts); free space there, then `training runs resume` continues from the run's "
        "latest snapshot")
    events = client.get(f"/v1/runs/{run_id}/events", headers=ADMIN).json["items"]
    assert ("warn", reasons.run_paused_disk_full(4)) in [(e["level"], e["message"]) for e in events]
    assert not [e for e in events if e["level"] == "error"]
    # the earlier snapshot is registered and intact; nothing of the one that failed is left anywhere
    [first] = client.get(f"/v1/snapshots?run={run_id}", headers=ADMIN).json["items"]
    assert first["step"] == 2 and first["damaged"] == {"weights": None, "trainingState": None}
    assert damage_of(worker.artifacts, first, "weights", "trainingState", deep=True) is None
    run_dir = root / "runs" / run_id
    assert sorted(p.name for p in (run_dir / "snapshots").iterdir()) == ["step-000002"]
    assert not list((run_dir / "hf").glob("checkpoint-*"))
    assert not [p for p in run_dir.rglob("*") if ".staging-" in p.name]

    filler_bytes = filled[0].stat().st_size
    filled[0].unlink()  # an operator frees space
    freed = time.monotonic()
    resumed = client.post(f"/v1/runs/{run_id}/resume", headers=ADMIN).json
    assert resumed["status"] == "QUEUED" and resumed["detail"] is None
    assert grant_and_take(app, config, worker, run_id) == "SUCCEEDED"
    print(f"\n{filler_bytes:,} bytes freed -> resumed from step 2 and SUCCEEDED in {time.monotonic() - freed:.1f} s")
    run = client.get(f"/v1/runs/{run_id}", headers=ADMIN).json
    assert run["status"] == "SUCCEEDED" and run["progress"]["step"] == 4
    steps = [s["step"] for s in client.get(f"/v1/snapshots?run={run_id}", headers=ADMIN).json["items"]]
    assert sorted(steps) == [2, 4]
    messages = [e["message"] for e in client.get(f"/v1/runs/{run_id}/events", headers=ADMIN).json["items"]]
    assert any(m.startswith("restoring trainingState from step-000002") for m in messages)
    worker.redis.close()
