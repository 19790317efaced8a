"""Branch comparisons through the API, without a worker: the refusals at submission (the SPEC 3.3
sentence word for word), one evaluation per snapshot, and the table derived from those evaluations.
Real scoring of a parent and its branches is tests/e2e/test_evaluations.py."""

from __future__ import annotations

import pytest

from services.api.comparisons import comparison_status, mark_best
from shared.claims.queue import ClaimQueue
from shared.store.ids import Kind, new_id
from tests.conftest import place_snapshot_files


@pytest.fixture
def store(app):
    place_snapshot_files(app.extensions["trainer"].artifacts.root)
    return app.extensions["trainer"].store


def snapshot(store, *, run=None, step=10, model="builtin/tiny-qwen3", weights="peft-safetensors") -> str:
    """A snapshot document as the worker's reporter writes it (its files placeholders: the `store`
    fixture puts them at its path)."""
    return store.create({
        "id": new_id(Kind.SNAPSHOT), "kind": "snapshot", "run": run, "workload": "runs", "step": step, "layout": 2,
        "gpus": 1, "method": "sft", "engine": "sft-single", "precision": "fp32", "model": model,
        "contents": {"weights": {"format": weights}, "trainingState": None}, "final": True, "path": "x",
        "detail": None})["id"]


def run_doc(store, restore=None) -> str:
    """The fields of a run document a comparison reads: its parent's restore kind."""
    return store.create({"id": new_id(Kind.RUN), "kind": "run", "workload": "runs", "status": "SUCCEEDED",
                         "parent": {"snapshot": "snap-x", "run": None, "restore": restore} if restore else None})["id"]


def compare(client, headers, snapshots, dataset, **extra):
    return client.post("/v1/comparisons", headers=headers, json={"snapshots": snapshots, "dataset": dataset, **extra})


def test_refuses_a_snapshot_whose_weights_it_cannot_load_with_the_spec_sentence(client, admin, dataset, store):
    good, bad = snapshot(store), snapshot(store, weights="onnx-lora")
    resp = compare(client, admin, [good, bad], dataset)
    assert resp.status_code == 422
    assert resp.json["error"]["message"] == (
        f"branch comparisons cannot evaluate snapshot {bad} yet: its weights are in a layout a comparison does not load")
    assert resp.json["error"]["details"]["snapshot"] == bad
    assert client.get("/v1/evaluations", headers=admin).json["items"] == []  # nothing queued
    assert client.get("/v1/comparisons", headers=admin).json["items"] == []


def test_other_refusals(client, admin, dataset, store):
    good = snapshot(store)
    resp = compare(client, admin, [good, "snap-nope"], dataset)
    assert resp.status_code == 404 and resp.json["error"]["message"] == "snapshot snap-nope does not exist"
    other = snapshot(store, model="Qwen/Qwen3-8B")
    resp = compare(client, admin, [good, other], dataset)
    assert resp.status_code == 422 and resp.json["error"]["message"] == (
        f"a comparison scores snapshots of one base model, and these hold adapters of several: "
        f"{good} (builtin/tiny-qwen3), {other} (Qwen/Qwen3-8B)")
    resp = compare(client, admin, [good], dataset)
    assert resp.status_code == 400 and resp.json["error"]["message"] == (
        'comparison field snapshots: needs at least 2 snapshots, or 1 with "base": true to compare it with its '
        'base model')
    resp = compare(client, admin, [], dataset, base=True)
    assert resp.status_code == 400 and resp.json["error"]["message"] == (
        "comparison field snapshots: Length must be between 1 and 16.")
    resp = compare(client, admin, [good, good], dataset)
    assert resp.status_code == 400 and resp.json["error"]["message"] == "comparison field snapshots: names a snapshot twice"
    resp = compare(client, admin, [good, snapshot(store)], "ds-nope")
    assert resp.status_code == 404 and resp.json["error"]["message"] == "dataset ds-nope does not exist"
    resp = compare(client, admin, [good, snapshot(store)], dataset, pool="nowhere")
    assert resp.status_code == 404 and resp.json["error"]["message"] == "pool nowhere does not exist in this deployment"
    assert client.get("/v1/comparisons/cmp-nope", headers=admin).status_code == 404


def test_one_evaluation_per_snapshot_and_a_derived_table(client, admin, dataset, store):
    parent = snapshot(store, run=run_doc(store), step=4)
    weights = snapshot(store, run=run_doc(store, "weights"), step=40)
    state = snapshot(store, run=run_doc(store, "trainingState"), step=44)
    resp = compare(client, admin, [parent, weights, state], dataset)
    assert resp.status_code == 201, resp.json
    cmp = resp.json
    assert cmp["id"].startswith("cmp-") and cmp["status"] == "QUEUED" and cmp["workload"] == "evaluations"
    assert [(r["snapshot"], r["step"], r["restore"], r["status"]) for r in cmp["rows"]] == [
        (parent, 4, "none", "QUEUED"), (weights, 40, "weights", "QUEUED"), (state, 44, "trainingState", "QUEUED")]
    evaluations = client.get(f"/v1/evaluations?comparison={cmp['id']}", headers=admin).json["items"]
    assert sorted(e["snapshot"] for e in evaluations) == sorted([parent, weights, state])
    assert all(e["comparison"] == cmp["id"] and e["dataset"] == dataset for e in evaluations)

    by_snapshot = {r["snapshot"]: r["evaluation"] for r in cmp["rows"]}
    store.update(by_snapshot[parent], lambda d: {**d, "status": "RUNNING"})
    assert client.get(f"/v1/comparisons/{cmp['id']}", headers=admin).json["status"] == "RUNNING"
    for snap, loss, match in ((parent, 2.0, 0.1), (weights, 1.2, 0.5), (state, 1.4, 0.5)):
        store.update(by_snapshot[snap], lambda d, loss=loss, match=match: {
            **d, "status": "SUCCEEDED", "metrics": {"loss": loss, "perplexity": 2.0 ** loss, "exactMatch": match,
                                                    "rewards": {"exact_match": match}, "judge": None}})
    done = client.get(f"/v1/comparisons/{cmp['id']}", headers=admin).json
    assert done["status"] == "SUCCEEDED"
    assert done["best"] == {"exactMatch": [weights, state], "loss": [weights], "perplexity": [weights],
                            "reward:exact_match": [weights, state]}
    rows = {r["snapshot"]: r for r in done["rows"]}
    assert rows[parent]["best"] == [] and rows[state]["best"] == ["exactMatch", "reward:exact_match"]
    assert rows[weights]["metrics"]["loss"] == 1.2 and rows[parent]["metrics"]["judge"] is None
    assert [c["id"] for c in client.get("/v1/comparisons?status=SUCCEEDED", headers=admin).json["items"]] == [cmp["id"]]
    assert client.get("/v1/comparisons?status=QUEUED", headers=admin).json["items"] == []


def test_status_is_derived_from_the_evaluations():
    assert comparison_status(["QUEUED", "QUEUED"]) == "QUEUED"
    assert comparison_status(["QUEUED", "STARTING"]) == "RUNNING"
    assert comparison_status(["SUCCEEDED", "RUNNING"]) == "RUNNING"
    assert comparison_status(["SUCCEEDED", "SUCCEEDED"]) == "SUCCEEDED"
    assert comparison_status(["SUCCEEDED", "FAILED", "CANCELLED"]) == "FAILED"
    assert comparison_status(["SUCCEEDED", "CANCELLED"]) == "CANCELLED"


def test_best_is_lowest_loss_and_highest_score_and_skips_missing_values_and_full_ties():
    rows = [{"snapshot": "a", "status": "SUCCEEDED",
             "metrics": {"loss": 1.0, "exactMatch": 0.0, "judge": 0.2, "reward:x": None}},
            {"snapshot": "b", "status": "SUCCEEDED",
             "metrics": {"loss": 0.5, "exactMatch": 0.0, "judge": 0.9, "reward:x": 1.0}}]
    assert mark_best(rows) == {"judge": ["b"], "loss": ["b"], "reward:x": ["b"]}  # exactMatch: all tie
    base = {"snapshot": None, "base": True, "status": "SUCCEEDED", "metrics": {"loss": 0.1}}
    assert mark_best(rows + [base])["loss"] == ["base"]


def test_no_best_is_marked_until_every_row_has_ended():
    """Issue 30: a running comparison marked a best before its last row finished."""
    done = {"snapshot": "a", "status": "SUCCEEDED", "metrics": {"loss": 1.0}}
    for status in ("QUEUED", "STARTING", "RUNNING", None):
        assert mark_best([done, {"snapshot": "b", "status": status, "metrics": {"loss": None}}]) == {}
    assert mark_best([done, {"snapshot": "b", "status": "FAILED", "metrics": {"loss": None}}]) == {"loss": ["a"]}


def test_the_base_model_is_a_row_of_its_own(client, admin, dataset, store):
    """Issue 30: base against tuned in one comparison (`base: true`), its row without a snapshot,
    its evaluation the base model's; best names it `base`, and only once both rows ended."""
    tuned = snapshot(store, run=run_doc(store), step=8)
    resp = compare(client, admin, [tuned], dataset, base=True)
    assert resp.status_code == 201, resp.json
    cmp = resp.json
    assert [(r["snapshot"], r["base"], r["restore"], r["status"]) for r in cmp["rows"]] == [
        (tuned, False, "none", "QUEUED"), (None, True, None, "QUEUED")]
    evaluations = client.get(f"/v1/evaluations?comparison={cmp['id']}", headers=admin).json["items"]
    assert sorted((e["snapshot"] or "", e["model"]) for e in evaluations) == [
        ("", "builtin/tiny-qwen3"), (tuned, "builtin/tiny-qwen3")]
    by_row = {r["snapshot"] or "base": r["evaluation"] for r in cmp["rows"]}
    store.update(by_row[tuned], lambda d: {**d, "status": "SUCCEEDED", "metrics": {"loss": 0.4, "exactMatch": 0.9}})
    store.update(by_row["base"], lambda d: {**d, "status": "RUNNING"})
    running = client.get(f"/v1/comparisons/{cmp['id']}", headers=admin).json
    assert running["status"] == "RUNNING" and running["best"] == {}
    assert [r["best"] for r in running["rows"]] == [[], []]
    store.update(by_row["base"], lambda d: {**d, "status": "SUCCEEDED", "metrics": {"loss": 2.5, "exactMatch": 0.0}})
    done = client.get(f"/v1/comparisons/{cmp['id']}", headers=admin).json
    assert done["best"] == {"exactMatch": [tuned], "loss": [tuned]}
    store.update(by_row["base"], lambda d: {**d, "status": "FAILED", "detail": "out of memory", "metrics": None})
    failed = client.get(f"/v1/comparisons/{cmp['id']}", headers=admin).json
    assert failed["detail"] == f"evaluation {by_row['base']} of the base model failed: out of memory"


def test_delete_cancels_the_evaluations_that_have_not_ended(client, admin, dataset, store):
    first, second = snapshot(store, run=run_doc(store)), snapshot(store, run=run_doc(store, "weights"))
    cmp = compare(client, admin, [first, second], dataset).json
    by_snapshot = {r["snapshot"]: r["evaluation"] for r in cmp["rows"]}
    store.update(by_snapshot[first], lambda d: {**d, "status": "SUCCEEDED", "metrics": {"loss": 1.0}})
    resp = client.delete(f"/v1/comparisons/{cmp['id']}", headers=admin)
    assert resp.status_code == 200, resp.json
    statuses = {r["snapshot"]: r["status"] for r in resp.json["rows"]}
    assert statuses == {first: "SUCCEEDED", second: "CANCELLED"} and resp.json["status"] == "CANCELLED"
    again = client.delete(f"/v1/comparisons/{cmp['id']}", headers=admin)
    assert again.status_code == 409
    assert again.json["error"]["message"] == f"comparison {cmp['id']} has already ended (CANCELLED)"
    assert client.delete("/v1/comparisons/cmp-nope", headers=admin).status_code == 404


def claims_waiting(app) -> list[dict]:
    context = app.extensions["trainer"]
    return ClaimQueue(context.redis, context.keys).waiting("default")


@pytest.mark.parametrize("model, dataset_id, message", [
    ("builtin/tiny-qwen3", "ds-nope", "dataset ds-nope does not exist"),
    ("nope/nope", None, "model nope/nope is not in this deployment's catalog"),
])
def test_a_refused_comparison_stores_nothing_and_queues_no_claim(client, admin, app, dataset, store,
                                                                model, dataset_id, message):
    """The checks each evaluation makes (dataset, model, pool, claim) run before anything is stored."""
    resp = compare(client, admin, [snapshot(store, model=model), snapshot(store, model=model)], dataset_id or dataset)
    assert resp.status_code == 404 and resp.json["error"]["message"] == message
    assert client.get("/v1/comparisons", headers=admin).json["items"] == []
    assert client.get("/v1/evaluations", headers=admin).json["items"] == []
    assert claims_waiting(app) == []


def test_a_comparison_that_fails_part_way_withdraws_what_it_queued(client, admin, app, dataset, store,
                                                                  monkeypatch):
    """Every refusal comes before the first write; should queueing itself fail after the first
    evaluation (Redis lost mid-request), the evaluations already queued are cancelled, their claims
    released, and no comparison is stored."""
    from services.api import comparisons

    stored = []

    def store_then_fail(context, checked, *, claim_id, comparison):
        if stored:
            raise ConnectionError("redis went away")
        stored.append(real_store(context, checked, claim_id=claim_id, comparison=comparison))
        return stored[-1]

    real_store = comparisons.store_evaluation
    monkeypatch.setattr(comparisons, "store_evaluation", store_then_fail)
    resp = compare(client, admin, [snapshot(store), snapshot(store), snapshot(store)], dataset)
    assert resp.status_code == 500 and resp.json["error"]["code"] == "internal"
    assert client.get("/v1/comparisons", headers=admin).json["items"] == []
    [withdrawn] = client.get("/v1/evaluations", headers=admin).json["items"]
    assert withdrawn["id"] == stored[0]["id"] and withdrawn["status"] == "CANCELLED"
    assert withdrawn["detail"] == (f"withdrawn: comparison {withdrawn['comparison']} could not queue all of its "
                                   "evaluations, so it queued none")
    assert claims_waiting(app) == []
    context = app.extensions["trainer"]  # the places it reserved are given back (issue 26: the cap counts them)
    assert context.redis.zcard(context.keys.workload_queued(withdrawn["workload"])) == 0
    events = client.get(f"/v1/evaluations/{withdrawn['id']}/events", headers=admin).json["items"]
    assert events[-1]["message"] == "cancelled by the API"
