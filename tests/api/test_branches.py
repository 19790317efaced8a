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
            "hyperparameters": {"maxSteps": 5}, **extra}
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
