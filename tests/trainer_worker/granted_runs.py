"""A run granted on the node `local` and dispatched, as the scheduler leaves it for the worker's task:
what the tests that call `leased_work.execute` as the Celery task does start from."""

from __future__ import annotations

from typing import Any

from services.scheduler.dispatch import dispatch_granted
from services.trainer_worker.node_worker import Worker
from shared.claims.queue import ClaimQueue
from shared.store.ids import Kind, new_id
from tests.claim_fixtures import RecordingSender
from tests.conftest import mark_nodes_alive


def live_worker(config) -> Worker:
    """The node's worker, its node marked alive (the grant pass grants only on live nodes)."""
    worker = Worker(config, "local")
    mark_nodes_alive(worker.redis, worker.keys, config)
    return worker


def grant_run(worker: Worker, config, run_id: str | None = None, **fields: Any) -> tuple[str, dict]:
    """A QUEUED run (its document's fields over the defaults) granted one slot and dispatched:
    its id and its claim as stored."""
    run_id = run_id or new_id(Kind.RUN)
    worker.store.create({"id": run_id, "kind": "run", "status": "QUEUED", "workload": "runs", "pool": "default",
                         "gpus": 1, "scheduling": None, "plan": {}, "attempts": 0, "cancelRequested": False,
                         "progress": {"step": 0}, **fields})
    queue = ClaimQueue(worker.redis, worker.keys, config=config)
    claim = queue.submit(kind="run", resource_id=run_id, pool="default", gpus=1, workload="runs")
    queue.grant_pass(config, "default")
    dispatch_granted(queue=queue, store=worker.store, celery_app=RecordingSender(), config=config)
    return run_id, queue.get(claim["id"])
