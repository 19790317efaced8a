"""An evaluation whose worker was lost goes back to the queue keeping its place, like a run
(SPEC 2.5; services/scheduler/lost.py): an evaluation document, a granted and dispatched claim,
and no lease."""

from __future__ import annotations

import time

from services.scheduler.dispatch import dispatch_granted
from services.scheduler.lost import requeue_lost
from shared.lifecycle.states import ClaimState, EvaluationStatus
from shared.store.ids import Kind, new_id


def started_evaluation(queue, store, config, sender):
    evaluation_id = new_id(Kind.EVALUATION)
    store.create({"id": evaluation_id, "kind": "evaluation", "status": "QUEUED", "workload": "evaluations",
                  "pool": "default", "gpus": 1, "scheduling": None, "cancelRequested": False})
    claim = queue.submit(kind="evaluation", resource_id=evaluation_id, pool="default", gpus=1, workload="evaluations")
    queue.grant_pass(config, "default")
    dispatch_granted(queue=queue, store=store, celery_app=sender, config=config)
    assert store.get(evaluation_id)["status"] == "STARTING"
    assert sender.sent == [("trainer.execute", ["evaluation", evaluation_id, claim["id"]], "node.local")]
    store.update(evaluation_id, lambda doc: {**doc, "status": EvaluationStatus.RUNNING.value})
    return evaluation_id, queue.get(claim["id"])


def lost(queue, store, config, later_s):
    return requeue_lost(queue=queue, store=store, config=config, now=time.time() + later_s)


def test_an_evaluation_without_a_lease_is_requeued_keeping_its_place(queue, store, config, sender, make_run):
    evaluation_id, claim = started_evaluation(queue, store, config, sender)
    behind = make_run()
    queue.submit(kind="run", resource_id=behind, pool="default", gpus=1, workload="runs")
    assert lost(queue, store, config, later_s=config.worker_lost_after_s - 5) == []
    assert [c["id"] for c in lost(queue, store, config, later_s=config.worker_lost_after_s + 1)] == [claim["id"]]
    doc = store.get(evaluation_id)
    assert doc["status"] == "QUEUED" and doc["attempts"] == 1
    new = queue.current(evaluation_id)
    assert doc["scheduling"]["claim"] == new["id"] != claim["id"] and new["seq"] == claim["seq"]
    assert new["kind"] == "evaluation" and new["state"] == ClaimState.WAITING
    assert [c["resource"] for c in queue.waiting("default")] == [evaluation_id, behind]
    [event] = [e for e in store.events(evaluation_id) if e["level"] == "warn"]
    assert event["message"] == "worker lost on node local; re-queued keeping its place"


def test_a_held_lease_keeps_it_and_a_cancel_requested_one_is_cancelled(queue, store, config, sender, keys):
    evaluation_id, claim = started_evaluation(queue, store, config, sender)
    store.redis.set(keys.lease(evaluation_id), "worker-1", px=30_000)
    assert lost(queue, store, config, later_s=3600) == []
    store.redis.delete(keys.lease(evaluation_id))
    store.update(evaluation_id, lambda doc: {**doc, "cancelRequested": True})
    assert len(lost(queue, store, config, later_s=7200 + config.worker_lost_after_s)) == 1
    doc = store.get(evaluation_id)
    assert doc["status"] == "CANCELLED"
    assert doc["detail"] == "cancelled by the user; its worker on node local was lost before it stopped"
    assert queue.get(claim["id"])["state"] == ClaimState.RELEASED
