"""A run whose worker was lost goes back to the queue keeping its place (SPEC 2.3): a run document,
a granted and dispatched claim, and no lease."""

from __future__ import annotations

import time

from services.scheduler.lost import requeue_lost
from shared.lifecycle.states import ClaimState, RunStatus


def started_run(queue, store, config, make_run, sender, *, status=RunStatus.RUNNING):
    from services.scheduler.dispatch import dispatch_granted

    run_id = make_run()
    claim = queue.submit(kind="run", resource_id=run_id, pool="default", gpus=1, workload="runs")
    queue.grant_pass(config, "default")
    dispatch_granted(queue=queue, store=store, celery_app=sender, config=config)
    store.update(run_id, lambda doc: {**doc, "status": status.value, "cancelRequested": False})
    return run_id, queue.get(claim["id"])


def lost(queue, store, config, later_s):
    return requeue_lost(queue=queue, store=store, config=config, now=time.time() + later_s)


def test_a_run_without_a_lease_past_the_grace_period_is_requeued_keeping_its_place(
    queue, store, config, make_run, sender
):
    run_id, claim = started_run(queue, store, config, make_run, sender)
    behind = make_run()
    queue.submit(kind="run", resource_id=behind, pool="default", gpus=1, workload="runs")
    assert lost(queue, store, config, later_s=config.worker_lost_after_s - 5) == []  # still within grace
    assert [c["id"] for c in lost(queue, store, config, later_s=config.worker_lost_after_s + 1)] == [claim["id"]]
    run = store.get(run_id)
    assert run["status"] == RunStatus.QUEUED
    assert run["attempts"] == 1 and run["cancelRequested"] is False
    new = queue.current(run_id)
    assert run["scheduling"]["claim"] == new["id"] != claim["id"]
    assert new["state"] == ClaimState.WAITING and new["seq"] == claim["seq"]
    assert queue.get(claim["id"])["state"] == ClaimState.RELEASED
    assert [c["resource"] for c in queue.waiting("default")] == [run_id, behind]  # its place kept
    [event] = [e for e in store.events(run_id) if e["level"] == "warn"]
    assert event["message"] == "worker lost on node local; re-queued keeping its place"
    assert lost(queue, store, config, later_s=3600) == []  # nothing left to give up


def test_a_held_lease_keeps_the_run_and_its_sighting_moves_the_deadline(queue, store, config, make_run, sender, keys):
    run_id, claim = started_run(queue, store, config, make_run, sender, status=RunStatus.STARTING)
    store.redis.set(keys.lease(run_id), "worker-1", px=30_000)
    assert lost(queue, store, config, later_s=3600) == []
    seen = queue.get(claim["id"])["leaseSeenAt"]
    assert seen
    store.redis.delete(keys.lease(run_id))
    # measured from when the lease was last seen (one hour from now), not from dispatchedAt
    assert lost(queue, store, config, later_s=3600 + config.worker_lost_after_s - 5) == []
    assert store.get(run_id)["status"] == RunStatus.STARTING
    assert len(lost(queue, store, config, later_s=3600 + config.worker_lost_after_s + 5)) == 1
    assert store.get(run_id)["status"] == RunStatus.QUEUED


def test_a_cancel_requested_run_whose_worker_was_lost_is_cancelled(queue, store, config, make_run, sender):
    run_id, claim = started_run(queue, store, config, make_run, sender)
    store.update(run_id, lambda doc: {**doc, "cancelRequested": True})
    assert len(lost(queue, store, config, later_s=config.worker_lost_after_s + 1)) == 1
    run = store.get(run_id)
    assert run["status"] == RunStatus.CANCELLED
    assert run["detail"] == "cancelled by the user; its worker on node local was lost before it stopped"
    assert queue.get(claim["id"])["state"] == ClaimState.RELEASED
    assert queue.current(run_id) is None


def test_a_requeue_cut_short_after_the_run_changed_is_finished_by_the_next_pass(
    queue, store, config, make_run, sender
):
    run_id, claim = started_run(queue, store, config, make_run, sender)
    store.update(run_id, lambda doc: {**doc, "status": RunStatus.QUEUED.value,
                                      "scheduling": {**doc["scheduling"], "claim": "claim-next"}})
    lost(queue, store, config, later_s=0)
    assert queue.current(run_id)["id"] == "claim-next"
    assert queue.get("claim-next")["seq"] == claim["seq"]
    assert queue.requeue(claim["id"], new_claim_id="claim-next")["id"] == "claim-next"  # idempotent


def test_worker_lost_after_s_is_configurable():
    from shared.config.deployment import EMBEDDED_DEFAULT, parse_config

    assert parse_config(EMBEDDED_DEFAULT, env={}).worker_lost_after_s == 60
    assert parse_config({**EMBEDDED_DEFAULT, "scheduling": {"workerLostAfterS": 5}}, env={}).worker_lost_after_s == 5
    assert parse_config(EMBEDDED_DEFAULT, env={"TRAINING_WORKER_LOST_AFTER_S": "2.5"}).worker_lost_after_s == 2.5
