"""Mistakes in a plan are fixed in one go (issue 30): every refused field is in the answer's details,
a key spelt as another platform spells it (`max_steps`) or put at the wrong level gets "did you mean",
and a dataset is named by its id or by its name (the `--name` it was uploaded with, else its file's)."""

from __future__ import annotations

import io

from tests.api.conftest import CHAT_ROWS


def upload(client, token, name, workload=None):
    data = {"file": (io.BytesIO(CHAT_ROWS), "rows.jsonl"), "name": name}
    if workload:
        data["workload"] = workload
    resp = client.post("/v1/datasets", headers=token, data=data, content_type="multipart/form-data")
    assert resp.status_code == 201, resp.json
    return resp.json["id"]


def test_every_refused_field_is_named_with_the_field_it_was_meant_to_be(client, admin, dataset):
    resp = client.post("/v1/runs", headers=admin, json={
        "model": "builtin/tiny-qwen3", "dataset": dataset, "maxSteps": 5,
        "hyperparameters": {"max_steps": 5, "learningrate": 0.01, "batchSize": 0, "bogus": 1}})
    assert resp.status_code == 400
    assert resp.json["error"]["details"]["fields"] == {
        "maxSteps": ["Unknown field. Did you mean hyperparameters.maxSteps?"],
        "hyperparameters.batchSize": ["Must be greater than or equal to 1 and less than or equal to 65536."],
        "hyperparameters.max_steps": ["Unknown field. Did you mean maxSteps?"],
        "hyperparameters.learningrate": ["Unknown field. Did you mean learningRate?"],
        "hyperparameters.bogus": ["Unknown field."],
    }
    first, problems = next(iter(resp.json["error"]["details"]["fields"].items()))
    assert resp.json["error"]["message"] == f"plan field {first}: {problems[0]}"
    assert client.get("/v1/runs", headers=admin).json["items"] == []


def test_a_run_names_its_dataset_by_name_and_stores_its_id(client, admin):
    ds = upload(client, admin, "reverse-words")
    validation = upload(client, admin, "reverse-heldout")
    resp = client.post("/v1/runs", headers=admin, json={
        "model": "builtin/tiny-qwen3", "dataset": "reverse-words", "validationDataset": "reverse-heldout",
        "hyperparameters": {"maxSteps": 5}})
    assert resp.status_code == 201, resp.json
    assert (resp.json["plan"]["dataset"], resp.json["plan"]["validationDataset"]) == (ds, validation)


def test_an_evaluation_names_its_dataset_by_name(client, admin):
    ds = upload(client, admin, "scored-rows")
    resp = client.post("/v1/evaluations", headers=admin, json={"model": "builtin/tiny-qwen3",
                                                               "dataset": "scored-rows"})
    assert resp.status_code == 201, resp.json
    assert resp.json["dataset"] == ds


def test_a_name_of_several_datasets_is_refused_listing_them(client, admin):
    first, second = upload(client, admin, "twice"), upload(client, admin, "twice")
    resp = client.post("/v1/runs", headers=admin, json={"model": "builtin/tiny-qwen3", "dataset": "twice"})
    assert resp.status_code == 400
    assert resp.json["error"]["message"] == (
        f"2 datasets are named twice ({second}, {first}); name the one to use by its id")
    assert resp.json["error"]["details"] == {"field": "dataset", "ids": [second, first]}


def test_another_workloads_dataset_name_is_as_unknown_as_none(client, admin, team):
    upload(client, admin, "theirs-only")  # workload runs: the team token may not use it
    for name in ("theirs-only", "nobody-has-this"):
        resp = client.post("/v1/runs", headers=team, json={"model": "builtin/tiny-qwen3", "dataset": name,
                                                           "workload": "team-a"})
        assert resp.status_code == 404
        assert resp.json["error"] == {"code": "not_found", "message": f"dataset {name} does not exist",
                                      "details": {"field": "dataset"}}


def test_a_deleted_datasets_name_no_longer_finds_it(client, admin):
    ds = upload(client, admin, "gone-soon")
    assert client.delete(f"/v1/datasets/{ds}", headers=admin).status_code == 200
    resp = client.post("/v1/runs", headers=admin, json={"model": "builtin/tiny-qwen3", "dataset": "gone-soon"})
    assert resp.status_code == 404 and resp.json["error"]["message"] == "dataset gone-soon does not exist"
