"""Branch sources are checked at submission (SPEC 3.3). The snapshot documents here are written
the way the worker's reporter writes them; the real ones come from training in tests/e2e."""

import json

import pytest

from tests.conftest import place_snapshot_files


@pytest.fixture
def snapshot(app):
    store = app.extensions["trainer"].store

    def make(**fields):
        doc = {"id": f"snap-{len(fields)}{abs(hash(json.dumps(fields, sort_keys=True))) % 10**12}", "kind": "snapshot",
               "run": None, "workload": "runs", "step": 10, "layout": 2, "gpus": 1, "method": "sft",
               "engine": "sft-single", "precision": "fp32", "model": "builtin/tiny-qwen3",
               "contents": {"weights": {"format": "peft-safetensors", "path": "adapter"},
                            "trainingState": {"format": "hf-trainer", "path": "training_state"}},
               "final": False, "path": "x", "detail": None}
        doc.update(fields)
        place_snapshot_files(app.extensions["trainer"].artifacts.root, doc["path"])
        return store.create(doc)["id"]

    return make


def branch(client, admin, dataset, snap, what, **extra):
    body = {"model": "builtin/tiny-qwen3", "dataset": dataset, "restore": {"snapshot": snap, "what": what},
            "hyperparameters": {"maxSteps": 15}, **extra}
    return client.post("/v1/runs", headers=admin, json=body)


def test_branches_are_accepted_and_remember_their_parent(client, admin, dataset, snapshot):
    snap = snapshot()
    for what in ("weights", "trainingState"):
        resp = branch(client, admin, dataset, snap, what)
        assert resp.status_code == 201, resp.json
        assert resp.json["parent"] == {"snapshot": snap, "run": None, "restore": what}


def test_training_state_on_another_gpu_count(client, admin, dataset, snapshot):
    resp = branch(client, admin, dataset, snapshot(gpus=2), "trainingState")
    assert resp.status_code == 422
    assert resp.json["error"]["message"] == (
        "this snapshot's training state was saved across 2 GPU(s), and this run trains on 1. Restore its weights instead")


def test_unreadable_parts_use_the_spec_sentences(client, admin, dataset, snapshot):
    state = snapshot(contents={"weights": {"format": "peft-safetensors"}, "trainingState": {"format": "deepspeed-zero3"}})
    resp = branch(client, admin, dataset, state, "trainingState")
    assert resp.status_code == 422 and resp.json["error"]["message"] == (
        "this snapshot's training state is in a layout this deployment cannot read as a branch source. "
        "Restore its weights instead")
    assert branch(client, admin, dataset, state, "weights").status_code == 201
    weights = snapshot(contents={"weights": {"format": "onnx-lora"}, "trainingState": {"format": "hf-trainer"}})
    for what in ("weights", "trainingState"):
        resp = branch(client, admin, dataset, weights, what)
        assert resp.json["error"]["message"] == (
            "this snapshot's weights are in a layout this deployment cannot read as a branch source")


def test_training_state_branch_must_train_like_its_parent(client, admin, dataset, snapshot):
    resp = branch(client, admin, dataset, snapshot(precision="bf16"), "trainingState")
    assert resp.status_code == 422 and resp.json["error"]["message"] == (
        "a trainingState branch trains the way its parent did, and this plan changes its precision from bf16 to fp32. "
        "Restore its weights instead")
    resp = branch(client, admin, dataset, snapshot(engine="sft-other"), "trainingState")
    assert resp.json["error"]["message"] == (
        "a trainingState branch trains the way its parent did, and this plan changes its engine from sft-other to "
        "sft-single. Restore its weights instead")
    resp = branch(client, admin, dataset, snapshot(contents={"weights": {"format": "peft-safetensors"},
                                                            "trainingState": None}), "trainingState")
    assert resp.json["error"]["message"].endswith("holds no training state. Restore its weights instead")


def test_branch_from_another_model_or_unknown_snapshot(client, admin, dataset, snapshot):
    resp = branch(client, admin, dataset, snapshot(model="Qwen/Qwen3-8B"), "weights")
    assert resp.status_code == 422 and "holds an adapter of Qwen/Qwen3-8B, and this plan trains builtin/tiny-qwen3" in (
        resp.json["error"]["message"])
    resp = branch(client, admin, dataset, "snap-nope", "weights")
    assert resp.status_code == 404 and resp.json["error"]["message"] == "snapshot snap-nope does not exist"
    assert client.get("/v1/runs", headers=admin).json["items"] == []


def test_pause_and_resume_refuse_wrong_statuses(client, admin, dataset):
    run = client.post("/v1/runs", headers=admin, json={"model": "builtin/tiny-qwen3", "dataset": dataset}).json
    resp = client.post(f"/v1/runs/{run['id']}/pause", headers=admin)
    assert resp.status_code == 409 and resp.json["error"]["message"] == (
        f"run {run['id']} is QUEUED; only a STARTING or RUNNING run can be paused")
    resp = client.post(f"/v1/runs/{run['id']}/resume", headers=admin)
    assert resp.status_code == 409 and resp.json["error"]["message"] == (
        f"run {run['id']} is QUEUED; only a PAUSED run can be resumed")


# --- How long a branch trains (issue 30): maxSteps is the step a run ends at, on its own step count


def test_a_training_state_branch_that_would_train_no_step_is_refused_saying_why(client, admin, dataset, snapshot):
    snap = snapshot(step=100)
    for max_steps in (50, 100):
        resp = branch(client, admin, dataset, snap, "trainingState", hyperparameters={"maxSteps": max_steps})
        assert resp.status_code == 400, resp.json
        assert resp.json["error"]["message"] == (
            f"this trainingState branch would train no step: it continues the step count of snapshot {snap} from "
            f"step 100, and maxSteps {max_steps} ends it at step {max_steps}. maxSteps is the step a run ends at, "
            "not the steps it adds: set maxSteps above 100 (maxSteps 150 trains 50 steps), or restore its weights "
            "to count steps from 0")
        assert resp.json["error"]["details"] == {"field": "hyperparameters.maxSteps", "startStep": 100,
                                                 "endStep": max_steps}
    assert client.get("/v1/runs", headers=admin).json["items"] == []  # nothing stored, nothing queued


def test_a_training_state_branch_by_epochs_is_judged_by_the_steps_they_make(client, admin, dataset, snapshot):
    snap = snapshot(step=100)
    # the dataset's 4 rows at batchSize 1: 2 epochs end at step 8
    resp = branch(client, admin, dataset, snap, "trainingState",
                  hyperparameters={"epochs": 2, "batchSize": 1})
    assert resp.status_code == 400 and resp.json["error"]["message"] == (
        f"this trainingState branch would train no step: it continues the step count of snapshot {snap} from "
        "step 100, and 2 epoch(s) of 4 row(s) at batchSize 1 end it at about step 8. maxSteps is the step a run "
        "ends at, not the steps it adds: set maxSteps above 100 (maxSteps 150 trains 50 steps), or restore its "
        "weights to count steps from 0")
    assert resp.json["error"]["details"]["field"] == "hyperparameters.epochs"


def test_every_run_says_the_steps_it_trains(client, admin, dataset, snapshot):
    snap = snapshot(step=100)
    fresh = client.post("/v1/runs", headers=admin, json={"model": "builtin/tiny-qwen3", "dataset": dataset,
                                                          "hyperparameters": {"maxSteps": 50}}).json
    assert fresh["stepRange"] == {"startStep": 0, "endStep": 50, "newSteps": 50, "estimated": False}
    # a weights branch has a fresh optimizer and counts from 0: maxSteps 50 trains 50 steps
    weights = branch(client, admin, dataset, snap, "weights", hyperparameters={"maxSteps": 50})
    assert weights.status_code == 201
    assert weights.json["stepRange"] == {"startStep": 0, "endStep": 50, "newSteps": 50, "estimated": False}
    # a trainingState branch continues the snapshot's count: maxSteps 150 trains 50 steps
    state = branch(client, admin, dataset, snap, "trainingState", hyperparameters={"maxSteps": 150})
    assert state.status_code == 201
    assert state.json["stepRange"] == {"startStep": 100, "endStep": 150, "newSteps": 50, "estimated": False}
    assert state.json["progress"]["step"] == 100 and weights.json["progress"]["step"] == 0  # where each starts
    by_epochs = client.post("/v1/runs", headers=admin, json={"model": "builtin/tiny-qwen3", "dataset": dataset,
                                                              "hyperparameters": {"epochs": 2, "batchSize": 1}}).json
    assert by_epochs["stepRange"] == {"startStep": 0, "endStep": 8, "newSteps": 8, "estimated": True}
    assert client.get(f"/v1/runs/{state.json['id']}", headers=admin).json["stepRange"]["newSteps"] == 50
