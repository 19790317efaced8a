"""One token could queue any number of runs, evaluations and endpoints (issue 26, item 6). A
workload may have `scheduling.maxQueuedPerWorkload` of them waiting for GPUs at once, all kinds and
pools together; a submission past it is refused with 429 and the sentence naming the cap and the
workload, before anything is stored, and the next one is accepted once one of them leaves the queue.
"""

from __future__ import annotations

import io

import pytest

from shared import reasons
from tests.api.conftest import CHAT_ROWS
from tests.api.test_bad_input import error_of
from tests.api.test_comparisons import compare, snapshot
from tests.api.test_comparisons import store as store  # noqa: F401 (the fixture)
from tests.conftest import make_config

CAP = 3
MODEL = "builtin/tiny-qwen3"


@pytest.fixture
def config(redis_url, key_prefix, shared_artifacts):
    return make_config(redis_url, key_prefix, shared_artifacts, scheduling={"maxQueuedPerWorkload": CAP})


@pytest.fixture
def team_dataset(client, team):
    resp = client.post("/v1/datasets", headers=team, data={"file": (io.BytesIO(CHAT_ROWS), "d.jsonl"),
                                                           "workload": "team-a"}, content_type="multipart/form-data")
    return resp.json["id"]


def run(dataset, **more):
    return {"model": MODEL, "dataset": dataset, "hyperparameters": {"maxSteps": 2, "batchSize": 2}, **more}


def counts(client, headers):
    return {kind: len(client.get(f"/v1/{kind}", headers=headers).json["items"])
            for kind in ("runs", "evaluations", "endpoints", "comparisons")}


def assert_capped(resp, *, workload, queued, asked=1):
    assert resp.status_code == 429, resp.json
    assert error_of(resp) == {"code": "too_many_queued",
                              "message": reasons.queued_claims_cap(workload=workload, cap=CAP, queued=queued,
                                                                   asked=asked),
                              "details": {"workload": workload, "queued": queued, "maxQueued": CAP}}


def test_runs_evaluations_and_endpoints_share_the_cap_and_a_refusal_stores_nothing(client, team, admin,
                                                                                   team_dataset):
    mine = {"workload": "team-a"}
    created = [
        client.post("/v1/runs", headers=team, json=run(team_dataset, **mine)),
        client.post("/v1/evaluations", headers=team, json={"model": MODEL, "dataset": team_dataset, **mine}),
        client.post("/v1/endpoints", headers=team, json={"model": MODEL, "name": "chat", **mine}),
    ]
    assert [r.status_code for r in created] == [201, 201, 201], [r.json for r in created]
    before = counts(client, team)
    for path, body in [("/v1/endpoints", {"model": MODEL, "name": "other", **mine}),
                       ("/v1/runs", run(team_dataset, **mine)),
                       ("/v1/evaluations", {"model": MODEL, "dataset": team_dataset, **mine})]:
        assert_capped(client.post(path, headers=team, json=body), workload="team-a", queued=CAP)
    assert counts(client, team) == before  # refused before anything was stored
    assert client.get("/v1/endpoints/other", headers=team).status_code == 404  # the name was not taken

    # another workload's queue is its own, the same token's other workload too
    assert client.post("/v1/endpoints", headers=admin, json={"model": MODEL}).status_code == 201
    assert client.post("/v1/endpoints", headers=team, json={"model": MODEL, "workload": "small"}).status_code == 201

    # a queued one leaves the queue (cancelled here; granted would do the same): a place is free
    assert client.delete(f"/v1/runs/{created[0].json['id']}", headers=team).status_code == 200
    assert client.post("/v1/endpoints", headers=team, json={"model": MODEL, "name": "other", **mine}).status_code == 201
    assert_capped(client.post("/v1/endpoints", headers=team, json={"model": MODEL, **mine}), workload="team-a",
                  queued=CAP)


def test_a_comparison_needs_a_place_for_each_of_its_evaluations(client, admin, dataset, store):  # noqa: F811
    snapshots = [snapshot(store), snapshot(store)]
    first = client.post("/v1/evaluations", headers=admin, json={"model": MODEL, "dataset": dataset})
    second = client.post("/v1/evaluations", headers=admin, json={"model": MODEL, "dataset": dataset})
    assert first.status_code == second.status_code == 201
    before = counts(client, admin)
    assert_capped(compare(client, admin, snapshots, dataset), workload="evaluations", queued=2, asked=2)
    assert counts(client, admin) == before  # no comparison, and none of its evaluations
    client.delete(f"/v1/evaluations/{first.json['id']}", headers=admin)
    assert compare(client, admin, snapshots, dataset).status_code == 201


def test_resuming_a_paused_run_past_the_cap_leaves_it_paused(app, client, admin, dataset):
    paused = client.post("/v1/runs", headers=admin, json=run(dataset)).json
    context = app.extensions["trainer"]
    context.claims().release(paused["scheduling"]["claim"])  # as the worker leaves a paused run
    context.store.update(paused["id"], lambda d: {**d, "status": "PAUSED"})
    for _ in range(CAP):
        assert client.post("/v1/runs", headers=admin, json=run(dataset)).status_code == 201
    assert_capped(client.post(f"/v1/runs/{paused['id']}/resume", headers=admin), workload="runs", queued=CAP)
    assert client.get(f"/v1/runs/{paused['id']}", headers=admin).json["status"] == "PAUSED"
