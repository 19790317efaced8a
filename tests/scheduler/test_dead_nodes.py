"""A node that stopped answering gives its work back at once (issue 27, item 1): a run whose node's
worker heartbeat is gone is told so on the first pass that sees it, and goes back to the queue
keeping its place once `nodeDeadAfterS` has passed, whatever its lease says, under a new fence."""

from __future__ import annotations

import time

from services.scheduler.dead_nodes import lease_node, track_absences
from services.scheduler.lost import requeue_lost
from shared.lifecycle.states import ClaimState, RunStatus
from tests.scheduler.test_lost import started_run

NOT_ANSWERING = ("node local stopped answering (its worker's heartbeat is gone); the run goes back to the queue "
                 "unless it answers within 3s")


def passes(queue, store, config, at: float):
    return requeue_lost(queue=queue, store=store, config=config, now=at)


def warns(store, run_id):
    return [e["message"] for e in store.events(run_id) if e["level"] == "warn"]


def test_a_run_on_a_dead_node_is_told_then_requeued_once_the_node_is_dead(queue, store, config, make_run, sender,
                                                                          keys):
    run_id, claim = started_run(queue, store, config, make_run, sender)
    behind = make_run()
    queue.submit(kind="run", resource_id=behind, pool="default", gpus=1, workload="runs")
    fence_before = int(store.redis.get(keys.fence(run_id)) or 0)
    token = f"local/host-a/4242:{'ab' * 6}"
    store.redis.set(keys.lease(run_id), token, px=30_000)  # the dead worker's lease, still within its TTL
    store.redis.delete(keys.node_alive("local"))  # its heartbeat expired
    t0 = time.time()

    assert passes(queue, store, config, t0) == []
    assert store.get(run_id)["status"] == RunStatus.RUNNING
    assert warns(store, run_id) == [NOT_ANSWERING]
    assert passes(queue, store, config, t0 + config.node_dead_after_s - 1) == []
    assert warns(store, run_id) == [NOT_ANSWERING]  # said once per absence

    assert [c["id"] for c in passes(queue, store, config, t0 + config.node_dead_after_s + 0.5)] == [claim["id"]]
    run = store.get(run_id)
    assert run["status"] == RunStatus.QUEUED and run["attempts"] == 1
    assert run["fence"] > fence_before  # whatever the old holder still tries to write is refused
    assert store.redis.get(keys.lease(run_id)) is None  # so the next holder can take it at once
    assert warns(store, run_id) == [NOT_ANSWERING, "node local stopped answering; re-queued keeping its place"]
    assert queue.get(claim["id"])["state"] == ClaimState.RELEASED
    assert [c["resource"] for c in queue.waiting("default")] == [run_id, behind]  # its place kept


def test_a_heartbeat_back_within_the_margin_changes_nothing(queue, store, config, make_run, sender, keys):
    run_id, claim = started_run(queue, store, config, make_run, sender)
    store.redis.set(keys.lease(run_id), f"local/host-a/4242:{'ab' * 6}", px=30_000)
    store.redis.delete(keys.node_alive("local"))  # as after a Redis restart that dropped it
    t0 = time.time()
    passes(queue, store, config, t0)
    store.redis.set(keys.node_alive("local"), "beating again")
    assert passes(queue, store, config, t0 + config.node_dead_after_s + 5) == []
    assert store.get(run_id)["status"] == RunStatus.RUNNING
    assert store.redis.hgetall(keys.workers_missing()) == {}
    # a later absence counts from its own start
    store.redis.delete(keys.node_alive("local"))
    t1 = t0 + 100
    assert passes(queue, store, config, t1) == []
    assert len(warns(store, run_id)) == 2
    assert len(passes(queue, store, config, t1 + config.node_dead_after_s + 0.5)) == 1


def test_a_lease_held_on_another_node_is_left_to_the_lease_rule(queue, store, config, make_run, sender, keys):
    run_id, claim = started_run(queue, store, config, make_run, sender)
    store.redis.set(keys.lease(run_id), f"elsewhere/host-b/7:{'cd' * 6}", px=30_000)
    store.redis.delete(keys.node_alive("local"))
    t0 = time.time()
    passes(queue, store, config, t0)
    assert passes(queue, store, config, t0 + config.node_dead_after_s + 1) == []
    assert store.get(run_id)["status"] == RunStatus.RUNNING
    assert store.redis.get(keys.lease(run_id))


def test_a_cancel_requested_run_on_a_dead_node_is_cancelled(queue, store, config, make_run, sender, keys):
    run_id, claim = started_run(queue, store, config, make_run, sender)
    store.update(run_id, lambda doc: {**doc, "cancelRequested": True})
    store.redis.delete(keys.node_alive("local"))
    t0 = time.time()
    passes(queue, store, config, t0)
    assert len(passes(queue, store, config, t0 + config.node_dead_after_s + 1)) == 1
    run = store.get(run_id)
    assert run["status"] == RunStatus.CANCELLED
    assert run["detail"] == "cancelled by the user; its node local stopped answering before it stopped"


def test_two_schedulers_count_an_absence_from_the_same_moment(redis_client, keys):
    first = track_absences(redis_client, keys.workers_missing(), {"a": False, "b": True}, now=100.0)
    second = track_absences(redis_client, keys.workers_missing(), {"a": False, "b": True}, now=105.0)
    assert first.new == {"a"} and second.new == set()
    assert first.since == second.since == {"a": 100.0}
    assert second.dead("a", now=103.5, after_s=3) and not second.dead("a", now=102.0, after_s=3)
    assert not second.dead("b", now=1e9, after_s=3)


def test_lease_tokens_name_their_node():
    assert lease_node("node-a/host/12:abcdef") == "node-a"
    assert lease_node("worker-1") is None and lease_node(None) is None


def test_node_dead_after_s_is_configurable():
    from shared.config.deployment import EMBEDDED_DEFAULT, parse_config

    assert parse_config(EMBEDDED_DEFAULT, env={}).node_dead_after_s == 3
    assert parse_config({**EMBEDDED_DEFAULT, "scheduling": {"nodeDeadAfterS": 5}}, env={}).node_dead_after_s == 5
    assert parse_config(EMBEDDED_DEFAULT, env={"TRAINING_NODE_DEAD_AFTER_S": "0.5"}).node_dead_after_s == 0.5


def test_a_node_whose_worker_is_stopping_is_left_to_give_its_runs_back(queue, store, config, make_run, sender, keys):
    """A stopped worker drops its heartbeat at once (nothing more is granted there) but gives its
    runs back itself, each after its last snapshot (trainer_worker/stopping.py): while its
    `node:NODE:stopping` lasts, the dead-node rule leaves them alone, then applies as usual."""
    run_id, claim = started_run(queue, store, config, make_run, sender)
    store.redis.set(keys.lease(run_id), f"local/host-a/4242:{'ab' * 6}", px=30_000)
    store.redis.delete(keys.node_alive("local"))
    store.redis.set(keys.node_stopping("local"), "the stopping worker", px=60_000)
    t0 = time.time()
    assert passes(queue, store, config, t0) == []
    assert passes(queue, store, config, t0 + config.node_dead_after_s + 5) == []
    assert store.get(run_id)["status"] == RunStatus.RUNNING and warns(store, run_id) == []

    store.redis.delete(keys.node_stopping("local"))  # it expired: the worker did not finish in time
    t1 = t0 + 20
    assert passes(queue, store, config, t1) == []
    assert warns(store, run_id) == [NOT_ANSWERING]
    assert [c["id"] for c in passes(queue, store, config, t1 + config.node_dead_after_s + 0.5)] == [claim["id"]]


def test_a_stopping_heartbeat_says_so_for_its_grace(store, keys):
    from services.trainer_worker.heartbeat import STOPPING_MARGIN_S, NodeHeartbeat

    redis_client = store.redis
    redis_client.delete(keys.node_alive("local"), keys.node_ready("local"))  # the fixtures' stand-in beat
    beat = NodeHeartbeat(redis_client, keys, "local").start()
    assert redis_client.exists(keys.node_alive("local"))
    beat.stop(giving_back_s=6.0)
    assert not redis_client.exists(keys.node_alive("local"))
    ttl = redis_client.ttl(keys.node_stopping("local"))
    assert 6.0 < ttl <= 6.0 + STOPPING_MARGIN_S
