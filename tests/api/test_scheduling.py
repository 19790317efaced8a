"""What a queued run waits on (GET /v1/runs) and the pools (GET /v1/pools), derived at read time
from the real claim queues. No endpoint service exists yet: endpoint claims and documents are
seeded here the way the endpoint manager will write them."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from shared.claims.queue import ClaimQueue
from shared.lifecycle.states import RunStatus
from shared.store.ids import Kind, new_id


def iso_ago(seconds: float) -> str:
    return datetime.fromtimestamp(time.time() - seconds, UTC).isoformat().replace("+00:00", "Z")


@pytest.fixture
def context(app):
    return app.extensions["trainer"]


@pytest.fixture
def queued(context):
    """Store a QUEUED run and queue its claim, as POST /v1/runs does."""

    def make(*, gpus=1, workload="runs", pool="default"):
        run_id = new_id(Kind.RUN)
        context.store.create({"id": run_id, "kind": "run", "workload": workload, "status": RunStatus.QUEUED.value,
                              "pool": pool, "gpus": gpus, "scheduling": None})
        claim = context.claims().submit(kind="run", resource_id=run_id, pool=pool, gpus=gpus, workload=workload)
        context.store.update(run_id, lambda d: {**d, "scheduling": {"claim": claim["id"], "pool": pool, "node": None,
                                                                    "devices": [], "position": None}})
        return run_id

    return make


@pytest.fixture
def endpoint(context, config):
    """An endpoint holding one GPU of pool default, idle for 42 minutes."""
    ep_id = new_id(Kind.ENDPOINT)
    context.store.create({"id": ep_id, "kind": "endpoint", "workload": "endpoints", "model": "Qwen/Qwen3-8B",
                          "lastRequestAt": iso_ago(42 * 60 + 5)})
    context.claims().submit(kind="endpoint", resource_id=ep_id, pool="default", gpus=1, workload="endpoints",
                            model="Qwen/Qwen3-8B")
    assert len(context.claims().grant_pass(config, "default")) == 1
    return ep_id


def test_a_queued_run_says_what_it_waits_on_word_for_word(client, admin, endpoint, queued):
    first, second = queued(gpus=2), queued(gpus=1)
    run = client.get(f"/v1/runs/{second}", headers=admin).json
    scheduling = run["scheduling"]
    assert (scheduling["position"], scheduling["reason"], scheduling["quota"]) == (2, "queued_behind", None)
    assert scheduling["waitingOn"] == {
        "heldBy": [{"kind": "endpoint", "id": endpoint, "gpus": 1, "model": "Qwen/Qwen3-8B", "idleSeconds": 42 * 60 + 5}],
        "queuedAhead": [{"kind": "run", "id": first, "gpus": 2}], "notAnswering": [],
    }
    assert scheduling["waitingText"] == (
        f"held by endpoint {endpoint} (Qwen/Qwen3-8B, idle 42m); queued ahead: run {first} (2 GPU)")
    head = client.get(f"/v1/runs/{first}", headers=admin).json["scheduling"]
    assert (head["position"], head["reason"]) == (1, "waiting_for_gpus")
    assert head["waitingText"] == f"held by endpoint {endpoint} (Qwen/Qwen3-8B, idle 42m)"
    listed = {r["id"]: r["scheduling"] for r in client.get("/v1/runs", headers=admin).json["items"]}
    assert listed[second]["waitingText"] == scheduling["waitingText"]
    assert listed[first]["position"] == 1


def test_a_quota_wait_names_the_quota(client, admin, queued, context, config):
    holder = queued(workload="small")
    context.claims().grant_pass(config, "default")
    blocked, other = queued(workload="small"), queued(workload="runs")
    scheduling = client.get(f"/v1/runs/{blocked}", headers=admin).json["scheduling"]
    assert scheduling["reason"] == "quota"
    assert scheduling["quota"] == {"workload": "small", "gpus": 1, "held": 1, "pool": "default"}
    assert scheduling["waitingText"] == (
        f"quota: workload small holds 1 of its 1 GPU(s) in pool default; held by run {holder} (1 GPU)")
    # passed over: the later claim of another workload fits now
    assert client.get(f"/v1/runs/{other}", headers=admin).json["scheduling"]["reason"] == "fits_now"


def test_a_workload_token_sees_only_its_own_ids(client, team, endpoint, queued):
    first, mine = queued(gpus=2), queued(workload="team-a")
    scheduling = client.get(f"/v1/runs/{mine}", headers=team).json["scheduling"]
    assert scheduling["waitingOn"] == {"heldBy": [{"kind": "endpoint", "id": None, "gpus": 1}],
                                       "queuedAhead": [{"kind": "run", "id": None, "gpus": 2}], "notAnswering": []}
    assert scheduling["waitingText"] == (
        "held by endpoint of another workload (1 GPU); queued ahead: run of another workload (2 GPU)")


def test_a_run_no_longer_queued_has_no_wait(client, admin, queued, context, config):
    run_id = queued()
    context.claims().grant_pass(config, "default")
    context.store.update(run_id, lambda d: {**d, "status": RunStatus.STARTING.value})
    assert "waitingOn" not in client.get(f"/v1/runs/{run_id}", headers=admin).json["scheduling"]


def test_pools_list_and_one_pool_with_holders_quotas_and_queue(client, admin, team, endpoint, queued):
    first, mine = queued(gpus=2), queued(workload="team-a")
    items = client.get("/v1/pools", headers=admin).json["items"]
    assert [(p["name"], p["gpus"], p["freeGpus"], p["heldGpus"], p["waiting"]) for p in items] == [
        ("default", 2, 1, 1, 2), ("big", 4, 4, 0, 0)]
    pool = client.get("/v1/pools/default", headers=admin).json
    assert pool["nodes"] == [{"name": "local", "deviceKind": "cpu", "gpus": 2, "heldGpus": 1, "freeGpus": 1,
                              "devices": ["cpu:0", "cpu:1"], "freeDevices": ["cpu:1"],
                              "workerAlive": True, "workerReady": True, "endpointManagerAlive": True}]
    assert pool["quotas"] == [{"workload": "small", "gpus": 1, "held": 0}]
    [holder] = pool["holders"]
    assert holder["kind"] == "endpoint" and holder["id"] == endpoint and holder["devices"] == ["cpu:0"]
    assert holder["workload"] == "endpoints" and holder["model"] == "Qwen/Qwen3-8B"
    assert [(q["position"], q["id"], q["gpus"], q["reason"]) for q in pool["queue"]] == [
        (1, first, 2, "waiting_for_gpus"), (2, mine, 1, "queued_behind")]
    seen_by_team = client.get("/v1/pools/default", headers=team).json
    assert [h["id"] for h in seen_by_team["holders"]] == [None]
    assert seen_by_team["holders"][0]["workload"] is None and "model" not in seen_by_team["holders"][0]
    assert [q["id"] for q in seen_by_team["queue"]] == [None, mine]
    missing = client.get("/v1/pools/nope", headers=admin)
    assert missing.status_code == 404
    assert missing.json["error"]["message"] == "pool nope does not exist in this deployment"


def test_the_openapi_document_lists_the_pools():
    from services.api.openapi import build_spec

    paths = build_spec()["paths"]
    assert "/v1/pools" in paths and "/v1/pools/{poolName}" in paths


def test_a_node_without_a_live_worker_grants_nothing_and_says_so(client, admin, dataset, app, config):
    context = app.extensions["trainer"]
    context.redis.delete(context.keys.node_alive("local"))
    run = client.post("/v1/runs", headers=admin, json={"model": "builtin/tiny-qwen3", "dataset": dataset}).json
    assert ClaimQueue(context.redis, context.keys).grant_pass(config, "default") == []
    shown = client.get(f"/v1/runs/{run['id']}", headers=admin).json["scheduling"]
    assert shown["reason"] == "no_live_worker"
    assert shown["waitingText"] == "node local has 2 free GPUs but its worker is not answering"
    pool = client.get("/v1/pools/default", headers=admin).json
    assert pool["nodes"][0]["workerAlive"] is False and pool["queue"][0]["reason"] == "no_live_worker"


def test_a_free_node_whose_worker_is_not_answering_is_named_on_the_waiting_run(
        redis_url, key_prefix, shared_artifacts, admin):
    """Issue 27, item 4: node-a is free but its worker is dead, node-b's holds a run. The queued run
    says why it waits on GPUs while the pool shows one free; pools and info show each service."""
    from services.api.app import create_app
    from tests.api.conftest import CHAT_ROWS
    from tests.conftest import make_config

    two = {"nodes": [{"name": "node-a", "devices": {"kind": "cpu", "count": 1}},
                     {"name": "node-b", "devices": {"kind": "cpu", "count": 1}}]}
    config = make_config(redis_url, key_prefix, shared_artifacts, pools={"two": two}, defaultPool="two")
    app = create_app(config)
    client, context = app.test_client(), app.extensions["trainer"]
    for key in (context.keys.node_alive("node-b"), context.keys.node_ready("node-b"),
                context.keys.endpoint_manager("node-b")):
        context.redis.set(key, "alive")  # node-a: nothing answers there
    import io

    dataset = client.post("/v1/datasets", headers=admin, data={"file": (io.BytesIO(CHAT_ROWS), "d.jsonl")},
                          content_type="multipart/form-data").json["id"]
    plan = {"model": "builtin/tiny-qwen3", "dataset": dataset}
    holder = client.post("/v1/runs", headers=admin, json=plan).json["id"]
    assert [c["node"] for c in ClaimQueue(context.redis, context.keys).grant_pass(config, "two")] == ["node-b"]
    waiting = client.post("/v1/runs", headers=admin, json=plan).json["id"]

    shown = client.get(f"/v1/runs/{waiting}", headers=admin).json["scheduling"]
    assert shown["reason"] == "waiting_for_gpus"
    assert shown["waitingOn"]["notAnswering"] == [{"node": "node-a", "freeGpus": 1, "service": "worker"}]
    assert shown["waitingText"] == (
        f"node node-a has 1 free GPU but its worker is not answering; held by run {holder} (1 GPU)")

    pool = client.get("/v1/pools/two", headers=admin).json
    assert [(n["name"], n["freeGpus"], n["workerAlive"], n["endpointManagerAlive"]) for n in pool["nodes"]] == [
        ("node-a", 1, False, False), ("node-b", 0, True, True)]
    info_nodes = client.get("/v1/info", headers=admin).json["pools"][0]["nodes"]
    assert [(n["name"], n["workerAlive"], n["workerReady"], n["endpointManagerAlive"]) for n in info_nodes] == [
        ("node-a", False, False, False), ("node-b", True, True, True)]
