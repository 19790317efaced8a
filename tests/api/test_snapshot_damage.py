"""Damaged snapshots (issue 14): a snapshot whose files are not as it recorded them reads as such in
every answer, and nothing is queued on it or downloaded from it. The files here are real files of
the artifact root, recorded by the same `record` the worker's reporter calls; damage is done with
plain file writes, as a disk or a careless hand would."""

from __future__ import annotations

import io
import tarfile

import pytest

from shared import reasons
from shared.snapshot_files import record

WEIGHTS = "adapter/adapter_model.safetensors"


@pytest.fixture
def snap(app):
    """A registered layout-2 snapshot with weights and training state; returns (id, its directory)."""
    context = app.extensions["trainer"]
    directory = context.artifacts.root / "runs" / "run-d" / "snapshots" / "step-10"
    for name, body in (("adapter/adapter_config.json", b'{"r": 8}'), (WEIGHTS, b"w" * 4096),
                       ("training_state/optimizer.pt", b"o" * 2048), ("training_state/trainer_state.json", b"{}")):
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_bytes(body)
    doc = context.store.create({
        "id": "snap-damage", "kind": "snapshot", "run": None, "workload": "runs", "step": 10, "layout": 2, "gpus": 1,
        "method": "sft", "engine": "sft-single", "precision": "fp32", "model": "builtin/tiny-qwen3",
        "contents": {"weights": {"format": "peft-safetensors", "path": "adapter"},
                     "trainingState": {"format": "hf-trainer", "path": "training_state"}},
        "files": record(directory), "final": False, "path": "runs/run-d/snapshots/step-10", "detail": None})
    return doc["id"], directory


def queue_everything(client, admin, dataset, snap_id):
    """Every request that queues work on a snapshot, or reads its files: status code and message."""
    answers = {
        "branch weights": client.post("/v1/runs", headers=admin, json={
            "model": "builtin/tiny-qwen3", "dataset": dataset, "hyperparameters": {"maxSteps": 15},
            "restore": {"snapshot": snap_id, "what": "weights"}}),
        "branch trainingState": client.post("/v1/runs", headers=admin, json={
            "model": "builtin/tiny-qwen3", "dataset": dataset, "hyperparameters": {"maxSteps": 15},
            "restore": {"snapshot": snap_id, "what": "trainingState"}}),
        "endpoint": client.post("/v1/endpoints", headers=admin, json={"model": "builtin/tiny-qwen3",
                                                                      "snapshot": snap_id}),
        "evaluation": client.post("/v1/evaluations", headers=admin, json={"model": "builtin/tiny-qwen3",
                                                                          "dataset": dataset, "snapshot": snap_id}),
        "download": client.get(f"/v1/snapshots/{snap_id}/adapter", headers=admin),
    }
    return {what: (resp.status_code, (resp.json or {}).get("error", {}).get("message")
                   if resp.mimetype == "application/json" else None) for what, resp in answers.items()}


def test_an_intact_snapshot_is_readable_and_every_use_is_accepted(client, admin, dataset, snap):
    snap_id, _ = snap
    shown = client.get(f"/v1/snapshots/{snap_id}", headers=admin).json
    assert shown["readable"] == {"weights": True, "trainingState": True}
    assert shown["damaged"] == {"weights": None, "trainingState": None}
    assert shown["files"][WEIGHTS]["bytes"] == 4096
    answers = queue_everything(client, admin, dataset, snap_id)
    assert {what: code for what, (code, _) in answers.items()} == {
        "branch weights": 201, "branch trainingState": 201, "endpoint": 201, "evaluation": 201, "download": 200}
    tar = tarfile.open(fileobj=io.BytesIO(client.get(f"/v1/snapshots/{snap_id}/adapter", headers=admin).data))
    assert sorted(tar.getnames()) == ["adapter_config.json", "adapter_model.safetensors"]
    assert tar.extractfile("adapter_model.safetensors").read() == b"w" * 4096


@pytest.mark.parametrize("harm, problem", [
    ("truncate", "has 100 bytes; the snapshot recorded 4096 bytes"),
    ("empty", "has 0 bytes; the snapshot recorded 4096 bytes"),
    ("delete", "is missing"),
])
def test_damaged_weights_read_as_unreadable_and_nothing_is_queued_on_them(client, admin, dataset, snap, harm,
                                                                          problem):
    snap_id, directory = snap
    weights = directory / WEIGHTS
    if harm == "delete":
        weights.unlink()
    else:
        weights.write_bytes(b"w" * (100 if harm == "truncate" else 0))
    shown = client.get(f"/v1/snapshots/{snap_id}", headers=admin).json
    assert shown["readable"] == {"weights": False, "trainingState": False}  # state without weights resumes nothing
    assert shown["damaged"]["weights"] == {"file": WEIGHTS, "problem": problem}
    listed = client.get("/v1/snapshots", headers=admin).json["items"]
    assert [s["readable"] for s in listed if s["id"] == snap_id] == [{"weights": False, "trainingState": False}]

    sentence = reasons.snapshot_damaged(snap_id, WEIGHTS, problem)
    assert sentence == f"snapshot {snap_id} is damaged: its file {WEIGHTS} {problem}"
    assert queue_everything(client, admin, dataset, snap_id) == {
        what: (422, sentence) for what in ("branch weights", "branch trainingState", "endpoint", "evaluation", "download")}
    assert client.get("/v1/runs", headers=admin).json["items"] == []  # nothing was queued
    assert client.get("/v1/endpoints", headers=admin).json["items"] == []
    assert client.get("/v1/evaluations", headers=admin).json["items"] == []


def test_weights_altered_in_place_are_found_before_work_is_queued(client, admin, dataset, snap):
    """Same size, other bytes: a list's quick look cannot see it, the sha256 check before a queue can."""
    snap_id, directory = snap
    (directory / WEIGHTS).write_bytes(b"x" * 4096)
    assert client.get(f"/v1/snapshots/{snap_id}", headers=admin).json["readable"]["weights"] is True
    sentence = reasons.snapshot_damaged(snap_id, WEIGHTS, "is not the file the snapshot recorded (its sha256 differs)")
    answers = queue_everything(client, admin, dataset, snap_id)
    assert answers == {what: (422, sentence) for what in answers}


def test_a_truncated_optimizer_refuses_a_training_state_branch_only(client, admin, dataset, snap):
    snap_id, directory = snap
    (directory / "training_state" / "optimizer.pt").write_bytes(b"o" * 7)
    shown = client.get(f"/v1/snapshots/{snap_id}", headers=admin).json
    assert shown["readable"] == {"weights": True, "trainingState": False}
    problem = "has 7 bytes; the snapshot recorded 2048 bytes"
    assert shown["damaged"] == {"weights": None,
                                "trainingState": {"file": "training_state/optimizer.pt", "problem": problem}}
    answers = queue_everything(client, admin, dataset, snap_id)
    assert answers["branch weights"][0] == 201 and answers["endpoint"][0] == 201
    assert answers["evaluation"][0] == 201 and answers["download"][0] == 200
    assert answers["branch trainingState"] == (
        422, reasons.snapshot_damaged(snap_id, "training_state/optimizer.pt", problem))
