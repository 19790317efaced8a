"""Endpoints of a node whose endpoint manager is gone (SPEC 6, "Outliving a restart"): a real Redis,
endpoint documents and claims as the API and the scheduler write them, a node lease present or not.
No serving process runs here (tests/endpoint_manager/test_manager_lost_node.py has the real one)."""

from __future__ import annotations

import time

from services.scheduler.dispatch import dispatch_granted
from services.scheduler.lost_endpoints import LostAction, decide_lost, recover_lost_endpoints
from shared.lifecycle.states import ClaimState, EndpointPhase
from shared.store.ids import Kind, new_id
from shared.store.times import iso


def endpoint(queue, store, config, sender, *, phase=EndpointPhase.READY, pool="default", start_timeout_s=30):
    """An endpoint granted and started on `pool`'s first node, then moved to `phase` with the
    address and process the endpoint manager records."""
    endpoint_id = new_id(Kind.ENDPOINT)
    store.create({"id": endpoint_id, "kind": "endpoint", "phase": "QUEUED", "workload": "endpoints",
                  "model": "builtin/tiny-qwen3", "gpus": 1, "pool": pool, "startTimeout": start_timeout_s,
                  "idleTimeout": 3600, "address": None, "readyAt": None, "startingSince": None, "process": None,
                  "scheduling": {"claim": None, "pool": pool, "node": None, "devices": []}})
    claim = queue.submit(kind="endpoint", resource_id=endpoint_id, pool=pool, gpus=1, workload="endpoints")
    store.update(endpoint_id, lambda d: {**d, "scheduling": {**d["scheduling"], "claim": claim["id"]}})
    queue.grant_pass(config, pool)
    dispatch_granted(queue=queue, store=store, celery_app=sender, config=config)
    assert store.get(endpoint_id)["phase"] == EndpointPhase.STARTING
    if phase == EndpointPhase.READY:
        store.update(endpoint_id, lambda d: {**d, "phase": "READY", "address": "http://127.0.0.1:9", "readyAt": iso(
            time.time()), "process": {"pid": 999999, "port": 9, "startTicks": 1}})
    return endpoint_id, queue.get(claim["id"])


def recover(queue, store, config, at):
    return recover_lost_endpoints(queue=queue, store=store, config=config, now=at)


def warnings(store, endpoint_id):
    return [e["message"] for e in store.events(endpoint_id) if e["level"] in ("warn", "error")]


def test_a_ready_endpoint_without_a_manager_goes_back_to_starting_then_fails_after_its_start_timeout(
    queue, store, config, sender, keys
):
    endpoint_id, claim = endpoint(queue, store, config, sender, start_timeout_s=30)
    before = store.get(endpoint_id)
    store.redis.set(keys.endpoint_manager("local"), "manager-1", px=15_000)
    t0 = time.time()
    assert recover(queue, store, config, t0 + 3600) == []  # a manager holds the node: nothing to do
    assert store.redis.hlen(keys.endpoint_managers_missing()) == 0

    store.redis.delete(keys.endpoint_manager("local"))  # its lease expired: the manager is gone
    lost_after = config.worker_lost_after_s
    assert recover(queue, store, config, t0) == []  # first seen missing: counted from now
    assert recover(queue, store, config, t0 + lost_after - 1) == []
    assert store.get(endpoint_id)["phase"] == EndpointPhase.READY

    assert recover(queue, store, config, t0 + lost_after + 1) == [endpoint_id]
    doc = store.get(endpoint_id)
    assert doc["phase"] == EndpointPhase.STARTING and doc["address"] is None
    assert doc["startingSince"] == iso(t0 + lost_after + 1)  # its start timeout runs again from now
    assert doc["scheduling"] == before["scheduling"] and doc["process"] == before["process"]  # GPUs kept
    assert queue.get(claim["id"])["state"] == ClaimState.GRANTED
    assert warnings(store, endpoint_id) == [
        "no endpoint manager runs on node local; its serving process is presumed lost until one is back"]
    assert recover(queue, store, config, t0 + lost_after + 2) == []  # once per absence of the manager

    restarted = t0 + lost_after + 1
    assert recover(queue, store, config, restarted + 29) == []  # within its start timeout
    assert recover(queue, store, config, restarted + 31) == [endpoint_id]
    doc = store.get(endpoint_id)
    assert doc["phase"] == EndpointPhase.FAILED and doc["address"] is None and doc["stoppedAt"]
    assert doc["detail"] == "did not become ready within 30s: no endpoint manager ran on node local"
    assert queue.get(claim["id"])["state"] == ClaimState.RELEASED
    assert warnings(store, endpoint_id)[-1] == doc["detail"]
    assert recover(queue, store, config, restarted + 32) == []
    assert store.redis.hlen(keys.endpoint_managers_missing()) == 0  # no endpoint claims left on the node


def test_a_manager_that_comes_back_in_time_keeps_its_endpoints_and_a_new_absence_counts_anew(
    queue, store, config, sender, keys
):
    endpoint_id, _ = endpoint(queue, store, config, sender)
    t0 = time.time()
    lost_after = config.worker_lost_after_s
    assert recover(queue, store, config, t0) == []
    store.redis.set(keys.endpoint_manager("local"), "manager-2", px=15_000)  # back before the threshold
    assert recover(queue, store, config, t0 + lost_after - 1) == []
    assert store.redis.hlen(keys.endpoint_managers_missing()) == 0

    store.redis.delete(keys.endpoint_manager("local"))
    later = t0 + 10 * lost_after
    assert recover(queue, store, config, later) == []  # a new absence, counted from this pass
    assert recover(queue, store, config, later + lost_after - 1) == []
    assert store.get(endpoint_id)["phase"] == EndpointPhase.READY
    assert recover(queue, store, config, later + lost_after + 1) == [endpoint_id]


def test_a_starting_endpoint_on_a_node_that_never_had_a_manager_fails_after_its_start_timeout(
    queue, store, config, sender, keys
):
    starting_id, _ = endpoint(queue, store, config, sender, phase=EndpointPhase.STARTING, start_timeout_s=60)
    other_id, _ = endpoint(queue, store, config, sender, pool="gpu")  # node big, whose manager is alive
    other_node = store.get(other_id)["scheduling"]["node"]
    store.redis.delete(keys.endpoint_manager("local"))  # granted while one answered; none since
    store.redis.set(keys.endpoint_manager(other_node), "manager-3", px=15_000)
    t0 = time.time()
    lost_after = config.worker_lost_after_s
    recover(queue, store, config, t0)
    assert recover(queue, store, config, t0 + lost_after + 1) == [starting_id]
    doc = store.get(starting_id)
    assert doc["phase"] == EndpointPhase.STARTING and doc["startingSince"] == iso(t0 + lost_after + 1)
    assert warnings(store, starting_id) == [
        "no endpoint manager runs on node local; its serving process is presumed lost until one is back"]
    assert recover(queue, store, config, t0 + lost_after + 59) == []
    assert recover(queue, store, config, t0 + lost_after + 62) == [starting_id]
    assert store.get(starting_id)["detail"] == "did not become ready within 60s: no endpoint manager ran on node local"
    assert store.get(other_id)["phase"] == EndpointPhase.READY and warnings(store, other_id) == []


def test_decide_lost_is_a_pure_function_of_the_document_and_the_time():
    since = "2026-01-01T00:00:00.000Z"
    assert decide_lost({"phase": "QUEUED"}, node="n", missing_since=since, now=0) is None
    assert decide_lost({"phase": "TERMINATED"}, node="n", missing_since=since, now=0) is None
    assert decide_lost({"phase": "READY"}, node="n", missing_since=since, now=0).action is LostAction.RESTART
    handled = {"phase": "STARTING", "managerMissingSince": since, "startTimeout": 10,
               "startingSince": "2026-01-01T00:01:00.000Z"}
    start = 1767225660.0  # 2026-01-01T00:01:00Z
    assert decide_lost(handled, node="n", missing_since=since, now=start + 9) is None
    failed = decide_lost(handled, node="n", missing_since=since, now=start + 11)
    assert failed.action is LostAction.FAIL
    assert failed.detail == "did not become ready within 10s: no endpoint manager ran on node n"
    other_absence = decide_lost(handled, node="n", missing_since="2026-02-01T00:00:00.000Z", now=start + 11)
    assert other_absence.action is LostAction.RESTART


MOVED = ("no endpoint manager runs on node small; back in the queue keeping its place, to start on a node that "
         "has one")


def test_an_endpoint_whose_node_lost_its_manager_moves_to_a_node_that_has_one(queue, store, config, sender, keys):
    """Issue 27, item 2: pool gpu has nodes big (4) and small (2); the endpoint runs on small (best
    fit); small's manager goes, big's answers."""
    endpoint_id, claim = endpoint(queue, store, config, sender, pool="gpu")
    before = store.get(endpoint_id)
    assert before["scheduling"]["node"] == "small"
    store.redis.delete(keys.endpoint_manager("small"))
    t0 = time.time()
    dead_after = config.node_dead_after_s
    assert recover(queue, store, config, t0) == []
    assert recover(queue, store, config, t0 + dead_after - 1) == []
    assert store.get(endpoint_id)["phase"] == EndpointPhase.READY

    assert recover(queue, store, config, t0 + dead_after + 0.5) == [endpoint_id]
    doc = store.get(endpoint_id)
    assert (doc["phase"], doc["address"], doc["process"], doc["startingSince"]) == (
        EndpointPhase.QUEUED, None, None, None)
    assert doc["leftBehind"] == [{"node": "small", "pid": 999999, "startTicks": 1}]  # for small's next manager
    new = queue.current(endpoint_id)
    assert doc["scheduling"]["claim"] == new["id"] != claim["id"]
    assert (doc["scheduling"]["node"], doc["scheduling"]["devices"]) == (None, [])
    assert (new["state"], new["seq"]) == (ClaimState.WAITING, claim["seq"])  # its place kept
    assert queue.get(claim["id"])["state"] == ClaimState.RELEASED
    assert warnings(store, endpoint_id) == [MOVED]
    assert recover(queue, store, config, t0 + dead_after + 1) == []  # nothing left on small

    [granted] = queue.grant_pass(config, "gpu")
    assert granted["node"] == "big"  # not small: no manager answers there
    dispatch_granted(queue=queue, store=store, celery_app=sender, config=config)
    started = store.get(endpoint_id)
    assert (started["phase"], started["scheduling"]["node"], started["requeuedAt"]) == (
        EndpointPhase.STARTING, "big", None)


def test_a_move_cut_short_after_the_endpoint_changed_is_finished_by_the_next_pass(queue, store, config, sender, keys):
    from shared.lifecycle import endpoints as endpoint_lifecycle

    endpoint_id, claim = endpoint(queue, store, config, sender, pool="gpu")
    store.update(endpoint_id, lambda d: endpoint_lifecycle.recorded(
        d, **endpoint_lifecycle.requeued(d, node="small", claim_id="claim-next")))  # then the scheduler stopped
    store.redis.delete(keys.endpoint_manager("small"))
    t0 = time.time()
    recover(queue, store, config, t0)
    recover(queue, store, config, t0 + config.node_dead_after_s + 1)
    assert queue.current(endpoint_id)["id"] == "claim-next"
    assert queue.get("claim-next")["seq"] == claim["seq"] and queue.get(claim["id"])["state"] == ClaimState.RELEASED
    assert warnings(store, endpoint_id) == []
