"""Dispatch, sweep and queue positions against a real Redis and real run documents."""

from __future__ import annotations

import json

from services.scheduler.dispatch import dispatch_granted, sweep
from shared import reasons
from shared.celery_app import EXECUTE_TASK, node_queue
from shared.states import ClaimState, RunStatus


def claim_for(queue, run_id, *, gpus=1, pool="default"):
    return queue.submit(kind="run", resource_id=run_id, pool=pool, gpus=gpus, workload="runs")


def dispatch(queue, store, config, sender):
    return dispatch_granted(queue=queue, store=store, celery_app=sender, config=config)


def test_granted_sentence_word_for_word():
    assert reasons.granted(gpus=1, node="local", devices=["cpu:0"]) == "granted 1 CPU slot(s) on node local (cpu:0)"
    assert (reasons.granted(gpus=2, node="big", devices=["cuda:0", "cuda:1"])
            == "granted 2 GPU(s) on node big (cuda:0, cuda:1)")


def test_dispatch_starts_the_run_and_sends_its_task_to_the_node(queue, store, config, make_run, sender):
    run_id = make_run()
    claim = claim_for(queue, run_id)
    queue.grant_pass(config, "default")
    assert [c["id"] for c in dispatch(queue, store, config, sender)] == [claim["id"]]
    run = store.get(run_id)
    assert run["status"] == RunStatus.STARTING
    assert run["scheduling"] == {"claim": claim["id"], "node": "local", "devices": ["cpu:0"], "position": None}
    assert [e["message"] for e in store.events(run_id)] == ["granted 1 CPU slot(s) on node local (cpu:0)"]
    assert sender.sent == [(EXECUTE_TASK, ["run", run_id, claim["id"]], node_queue("local"))]
    assert queue.get(claim["id"])["dispatchedAt"]
    assert dispatch(queue, store, config, sender) == []  # dispatched once
    assert len(sender.sent) == 1


def test_a_run_cancelled_before_dispatch_gives_its_claim_back(queue, store, config, make_run, sender):
    run_id = make_run()
    claim = claim_for(queue, run_id)
    queue.grant_pass(config, "default")
    store.update(run_id, lambda doc: {**doc, "status": RunStatus.CANCELLED.value})
    assert dispatch(queue, store, config, sender) == []
    assert sender.sent == []
    assert queue.get(claim["id"])["state"] == ClaimState.RELEASED
    assert store.get(run_id)["status"] == RunStatus.CANCELLED


def test_a_grant_whose_dispatch_was_cut_short_is_sent_again(queue, store, config, make_run, sender):
    """The scheduler stopped after starting the run but before sending its task."""
    run_id = make_run()
    claim = claim_for(queue, run_id)
    [granted] = queue.grant_pass(config, "default")
    store.update(run_id, lambda doc: {**doc, "status": RunStatus.STARTING.value,
                                      "scheduling": {"claim": claim["id"], "node": "local",
                                                     "devices": granted["devices"], "position": None}})
    assert len(dispatch(queue, store, config, sender)) == 1
    assert sender.sent == [(EXECUTE_TASK, ["run", run_id, claim["id"]], "node.local")]
    assert store.events(run_id) == []  # the run was already started; no second event
    assert queue.get(claim["id"])["dispatchedAt"]


def test_sweep_releases_claims_whose_run_ended_or_vanished(queue, store, config, make_run):
    done, gone, live, waiting_done = make_run(), make_run(), make_run(), make_run()
    claims = {r: claim_for(queue, r) for r in (done, gone)}
    queue.grant_pass(config, "default")
    claims[live] = claim_for(queue, live)
    claims[waiting_done] = claim_for(queue, waiting_done)
    store.update(done, lambda doc: {**doc, "status": RunStatus.SUCCEEDED.value})
    store.update(waiting_done, lambda doc: {**doc, "status": RunStatus.CANCELLED.value})
    store.redis.delete(store.keys.resource(gone))
    released = sweep(queue=queue, store=store, config=config)
    assert {c["resource"] for c in released} == {done, gone, waiting_done}
    assert queue.held("default") == []
    assert [c["resource"] for c in queue.waiting("default")] == [live]
    assert [g["resource"] for g in queue.grant_pass(config, "default")] == [live]


def test_a_resent_grant_is_not_sent_twice_while_its_task_still_waits_in_the_node_queue(
    queue, store, config, make_run, keys, redis_url
):
    """The scheduler stopped after sending the task but before stamping dispatchedAt: the task id
    is the claim id, so the next pass finds it in the broker queue and only stamps the claim."""
    from shared.celery_app import make_celery
    from shared.config import parse_config
    from tests.claim_fixtures import CONFIG

    celery_app = make_celery(parse_config(CONFIG, env={"TRAINING_KEY_PREFIX": keys.prefix,
                                                       "TRAINING_REDIS_URL": redis_url}))
    run_id = make_run()
    claim = claim_for(queue, run_id)
    queue.grant_pass(config, "default")
    dispatch(queue, store, config, celery_app)
    store.redis.set(keys.claim(claim["id"]), json.dumps({**queue.get(claim["id"]), "dispatchedAt": None}))
    store.redis.delete(keys.dispatching(claim["id"]))  # the lock of the scheduler that stopped expired
    assert len(dispatch(queue, store, config, celery_app)) == 1
    assert queue.get(claim["id"])["dispatchedAt"]
    assert store.redis.llen(keys.celery_prefix() + node_queue("local")) == 1
