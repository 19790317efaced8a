"""Evaluations through the API, without a worker: creation and its refusals, the claim it queues,
what a queued one waits on, cancel, lists, and the scheduler's dispatch of its claim. Scoring is
tested through the real worker in tests/e2e/test_evaluations.py."""

from __future__ import annotations

import json

import pytest

from tests.conftest import place_snapshot_files

from services.scheduler.dispatch import dispatch_granted, sweep
from shared import reasons
from shared.claims.queue import ClaimQueue


@pytest.fixture
def snapshot(app):
    """Snapshot documents as the worker's reporter writes them (real ones come from training in
    tests/e2e)."""
    store = app.extensions["trainer"].store

    def make(**fields):
        doc = {"id": f"snap-{abs(hash(json.dumps(fields, sort_keys=True))) % 10**12}", "kind": "snapshot",
               "run": None, "workload": "runs", "step": 10, "layout": 2, "gpus": 1, "method": "sft",
               "engine": "sft-single", "precision": "fp32", "model": "builtin/tiny-qwen3",
               "contents": {"weights": {"format": "peft-safetensors", "path": "adapter"}, "trainingState": None},
               "final": True, "path": "x", "detail": None}
        doc.update(fields)
        place_snapshot_files(app.extensions["trainer"].artifacts.root, doc["path"])
        return store.create(doc)["id"]

    return make


def create(client, headers, dataset, **body):
    return client.post("/v1/evaluations", headers=headers,
                       json={"model": "builtin/tiny-qwen3", "dataset": dataset, **body})


def test_create_queues_a_claim_of_kind_evaluation(client, admin, app, dataset):
    resp = create(client, admin, dataset)
    assert resp.status_code == 201, resp.json
    ev = resp.json
    assert ev["id"].startswith("eval-") and ev["status"] == "QUEUED" and ev["workload"] == "evaluations"
    assert ev["snapshot"] is None and ev["metrics"] is None and ev["progress"] == {"rows": 0, "totalRows": 4}
    assert ev["pool"] == "default" and ev["gpus"] == 1 and ev["createdAt"] and ev["updatedAt"]
    context = app.extensions["trainer"]
    claim = ClaimQueue(context.redis, context.keys).get(ev["scheduling"]["claim"])
    assert claim["kind"] == "evaluation" and claim["state"] == "WAITING" and claim["model"] == "builtin/tiny-qwen3"
    assert client.get(f"/v1/evaluations/{ev['id']}", headers=admin).json["id"] == ev["id"]
    events = client.get(f"/v1/evaluations/{ev['id']}/events", headers=admin).json["items"]
    assert [e["message"] for e in events] == ["queued in pool default for 1 CPU slot(s)"]


def test_bad_requests_name_what_was_wrong(client, admin, dataset, snapshot):
    resp = client.post("/v1/evaluations", headers=admin, json={"dataset": dataset})
    assert resp.status_code == 400
    assert resp.json["error"]["message"] == "evaluation field model: Missing data for required field."
    resp = create(client, admin, dataset, temperature=1)
    assert resp.status_code == 400 and resp.json["error"]["message"] == "evaluation field temperature: Unknown field."
    resp = create(client, admin, "ds-nope")
    assert resp.status_code == 404 and resp.json["error"]["message"] == "dataset ds-nope does not exist"
    resp = create(client, admin, dataset, model="nope/nope")
    assert resp.status_code == 404 and resp.json["error"]["message"] == "model nope/nope is not in this deployment's catalog"
    resp = create(client, admin, dataset, snapshot="snap-nope")
    assert resp.status_code == 404 and resp.json["error"]["message"] == "snapshot snap-nope does not exist"
    resp = create(client, admin, dataset, gpus=3)
    assert resp.status_code == 422 and resp.json["error"]["message"] == (
        "this evaluation asks for 3 GPU(s) of one node, and the largest node of pool default has 2")
    resp = create(client, admin, dataset, pool="nowhere")
    assert resp.status_code == 404 and resp.json["error"]["message"] == "pool nowhere does not exist in this deployment"
    assert resp.json["error"]["details"]["field"] == "pool"
    resp = create(client, admin, dataset, judge="ep-nope")
    assert resp.status_code == 404 and resp.json["error"]["message"] == (
        "judge ep-nope is not an endpoint of this deployment; `training endpoints get` lists them")
    resp = create(client, admin, dataset, rewards=[{"judge": "ep-x"}])
    assert resp.status_code == 400 and resp.json["error"]["message"] == (
        "evaluation field rewards.0.judge: an evaluation's rewards are reward functions; its judge is the `judge` field")
    resp = create(client, admin, dataset, rewards=[{"function": "bleu"}])
    assert resp.status_code == 400 and resp.json["error"]["message"] == (
        "evaluation field rewards.0.function: no reward function bleu in this deployment; it has exact_match, "
        "length, regex")
    resp = create(client, admin, dataset, rewards=[{"function": "exact_match"}, {"function": "regex",
                                                                                 "pattern": "(?<=a)b"}])
    assert resp.status_code == 400 and resp.json["error"]["details"]["field"] == "rewards.1.pattern"
    assert resp.json["error"]["message"] == "evaluation field " + reasons.reward_pattern_refused(
        "rewards.1", "invalid perl operator: (?<=")
    unreadable = snapshot(contents={"weights": {"format": "onnx-lora"}, "trainingState": None})
    resp = create(client, admin, dataset, snapshot=unreadable)
    assert resp.status_code == 422 and resp.json["error"]["message"] == (
        f"snapshot {unreadable}'s weights are in a layout this deployment cannot load for an evaluation")
    other = snapshot(model="Qwen/Qwen3-8B")
    resp = create(client, admin, dataset, snapshot=other)
    assert resp.status_code == 422 and resp.json["error"]["message"] == (
        f"snapshot {other} holds an adapter of Qwen/Qwen3-8B, and this evaluation scores builtin/tiny-qwen3")
    assert client.get("/v1/evaluations", headers=admin).json["items"] == []


def test_a_snapshot_evaluation_remembers_its_run_and_step(client, admin, dataset, snapshot):
    snap = snapshot(run="run-abc", step=7)
    ev = create(client, admin, dataset, snapshot=snap).json
    assert (ev["snapshot"], ev["run"], ev["step"]) == (snap, "run-abc", 7)


def test_a_judge_that_has_stopped_is_refused(client, admin, dataset):
    judge = client.post("/v1/endpoints", headers=admin, json={"model": "builtin/tiny-qwen3"}).json
    client.delete(f"/v1/endpoints/{judge['id']}", headers=admin)
    resp = create(client, admin, dataset, judge=judge["id"])
    assert resp.status_code == 422 and resp.json["error"]["message"] == (
        f"judge endpoint {judge['id']} is TERMINATED; start another endpoint to judge with")


def test_a_judge_is_named_by_id_or_by_a_live_endpoints_name_as_in_a_grpo_plan(client, admin, app, dataset):
    judge = client.post("/v1/endpoints", headers=admin, json={"model": "builtin/tiny-qwen3", "name": "grader"}).json
    for ref in (judge["id"], "grader"):
        resp = create(client, admin, dataset, judge=ref)
        assert resp.status_code == 201, resp.json
        stored = app.extensions["trainer"].store.get(resp.json["id"])
        # its worker looks the name up in that workload only, as a grpo run's does
        assert (stored["judge"], stored["judgeWorkloads"]) == (ref, {ref: judge["workload"]})
    client.delete(f"/v1/endpoints/{judge['id']}", headers=admin)
    resp = create(client, admin, dataset, judge="grader")  # no live endpoint has that name any more
    assert resp.status_code == 404 and resp.json["error"]["details"]["field"] == "judge"
    assert resp.json["error"]["message"] == reasons.judge_unknown("grader")
    resp = create(client, admin, dataset, judge=judge["id"])
    assert resp.status_code == 422 and resp.json["error"]["message"] == reasons.judge_ended(judge["id"], "TERMINATED")


def test_cancel_while_queued_releases_the_claim(client, admin, app, dataset):
    ev = create(client, admin, dataset).json
    done = client.delete(f"/v1/evaluations/{ev['id']}", headers=admin).json
    assert done["status"] == "CANCELLED" and done["detail"] == "cancelled by the user before it was granted GPUs"
    context = app.extensions["trainer"]
    assert ClaimQueue(context.redis, context.keys).get(ev["scheduling"]["claim"])["state"] == "RELEASED"
    again = client.delete(f"/v1/evaluations/{ev['id']}", headers=admin)
    assert again.status_code == 409
    assert again.json["error"]["message"] == f"evaluation {ev['id']} has already ended (CANCELLED)"
    rows = client.get(f"/v1/evaluations/{ev['id']}/rows", headers=admin)
    assert rows.status_code == 409 and rows.json["error"]["message"] == (
        f"evaluation {ev['id']} is CANCELLED; its per-row results exist once it has SUCCEEDED")


class _Celery:
    """Records send_task calls instead of talking to a broker (the real broker is exercised in tests/e2e)."""

    def __init__(self):
        self.sent = []

    def send_task(self, name, args, queue, task_id):
        self.sent.append((name, args, queue, task_id))


def test_the_scheduler_dispatches_an_evaluation_like_a_run(client, admin, app, config, dataset):
    ev = create(client, admin, dataset).json
    context = app.extensions["trainer"]
    queue = ClaimQueue(context.redis, context.keys, config=config)
    queue.grant_pass(config, "default")
    celery = _Celery()
    dispatch_granted(queue=queue, store=context.store, celery_app=celery, config=config)
    started = client.get(f"/v1/evaluations/{ev['id']}", headers=admin).json
    assert started["status"] == "STARTING"
    assert started["scheduling"]["node"] == "local" and started["scheduling"]["devices"] == ["cpu:0"]
    assert celery.sent == [("trainer.execute", ["evaluation", ev["id"], ev["scheduling"]["claim"]],
                            "node.local", ev["scheduling"]["claim"])]
    events = [e["message"] for e in client.get(f"/v1/evaluations/{ev['id']}/events", headers=admin).json["items"]]
    assert events[-1] == "granted 1 CPU slot(s) on node local (cpu:0)"
    # STARTING: a cancel is a request the worker carries out; an ended evaluation's claim is swept.
    assert client.delete(f"/v1/evaluations/{ev['id']}", headers=admin).json["cancelRequested"] is True
    assert sweep(queue=queue, store=context.store, config=config) == []
    context.store.update(ev["id"], lambda d: {**d, "status": "FAILED"})
    assert [c["id"] for c in sweep(queue=queue, store=context.store, config=config)] == [ev["scheduling"]["claim"]]


def test_a_queued_evaluation_says_what_it_waits_on(client, admin, app, config, dataset):
    holder = create(client, admin, dataset, gpus=2).json
    context = app.extensions["trainer"]
    ClaimQueue(context.redis, context.keys, config=config).grant_pass(config, "default")
    waiting = create(client, admin, dataset).json
    scheduling = client.get(f"/v1/evaluations/{waiting['id']}", headers=admin).json["scheduling"]
    assert scheduling["position"] == 1 and scheduling["reason"] == "waiting_for_gpus"
    assert scheduling["waitingOn"] == {"heldBy": [{"kind": "evaluation", "id": holder["id"], "gpus": 2}],
                                       "queuedAhead": [], "notAnswering": []}
    assert scheduling["waitingText"] == f"held by evaluation {holder['id']} (2 GPU)"


def test_lists_page_and_filter_by_status_and_workload(client, admin, team, dataset):
    first = create(client, admin, dataset).json
    second = create(client, admin, dataset).json
    client.delete(f"/v1/evaluations/{first['id']}", headers=admin)
    page = client.get("/v1/evaluations?limit=1", headers=admin).json
    assert [e["id"] for e in page["items"]] == [second["id"]] and page["nextCursor"] == second["id"]
    rest = client.get(f"/v1/evaluations?limit=1&after={page['nextCursor']}", headers=admin).json
    assert [e["id"] for e in rest["items"]] == [first["id"]]
    assert [e["id"] for e in client.get("/v1/evaluations?status=CANCELLED", headers=admin).json["items"]] == [first["id"]]
    assert client.get("/v1/evaluations?workload=runs", headers=admin).json["items"] == []
    # A team token sees neither the admin's evaluations nor its dataset.
    assert client.get("/v1/evaluations", headers=team).json["items"] == []
    assert client.get(f"/v1/evaluations/{first['id']}", headers=team).status_code == 404


def test_lists_filter_by_run_like_snapshots(client, admin, team, dataset, snapshot):
    first = create(client, admin, dataset, snapshot=snapshot(run="run-a", step=4)).json
    second = create(client, admin, dataset, snapshot=snapshot(run="run-a", step=8)).json
    create(client, admin, dataset, snapshot=snapshot(run="run-b"))
    create(client, admin, dataset)  # a base model's: no run
    listed = client.get("/v1/evaluations?run=run-a", headers=admin).json
    assert [e["id"] for e in listed["items"]] == [second["id"], first["id"]] and listed["nextCursor"] is None
    assert [e["step"] for e in listed["items"]] == [8, 4]
    paged = client.get("/v1/evaluations?run=run-a&limit=1", headers=admin).json
    assert [e["id"] for e in paged["items"]] == [second["id"]] and paged["nextCursor"] == second["id"]
    rest = client.get(f"/v1/evaluations?run=run-a&limit=1&after={paged['nextCursor']}", headers=admin).json
    assert [e["id"] for e in rest["items"]] == [first["id"]]
    client.delete(f"/v1/evaluations/{first['id']}", headers=admin)
    both = client.get("/v1/evaluations?run=run-a&status=CANCELLED", headers=admin).json["items"]
    assert [e["id"] for e in both] == [first["id"]]
    assert client.get("/v1/evaluations?run=run-nope", headers=admin).json["items"] == []
    assert client.get("/v1/evaluations?run=run-a", headers=team).json["items"] == []  # not its workload
