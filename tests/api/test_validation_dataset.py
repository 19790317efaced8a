"""A run may name a validationDataset (issue 7): checked at submission, its content digest kept on
the run for the worker, and how often it is scored taken from the plan."""

from __future__ import annotations

import io
import json


def _upload(client, admin, rows) -> dict:
    body = b"\n".join(json.dumps(r).encode() for r in rows)
    resp = client.post("/v1/datasets", headers=admin, data={"file": (io.BytesIO(body), "v.jsonl")},
                       content_type="multipart/form-data")
    assert resp.status_code == 201, resp.json
    return resp.json


def _plan(dataset, **extra):
    return {"model": "builtin/tiny-qwen3", "dataset": dataset, "hyperparameters": {"maxSteps": 5}, **extra}


def test_a_run_keeps_its_validation_dataset_and_interval(client, admin, dataset):
    validation = _upload(client, admin, [{"messages": [{"role": "user", "content": "q"},
                                                       {"role": "assistant", "content": "a"}]}])
    resp = client.post("/v1/runs", headers=admin,
                       json=_plan(dataset, validationDataset=validation["id"], validation={"everySteps": 2}))
    assert resp.status_code == 201, resp.json
    run = resp.json
    assert run["plan"]["validationDataset"] == validation["id"]
    assert run["plan"]["validation"] == {"everySteps": 2}
    assert run["validationDatasetDigest"] == validation["digest"]
    plain = client.post("/v1/runs", headers=admin, json=_plan(dataset)).json
    assert plain["plan"]["validation"] == {"everySteps": None} and plain["validationDatasetDigest"] is None


def test_a_validation_dataset_that_cannot_be_used_is_refused_naming_it(client, admin, dataset):
    resp = client.post("/v1/runs", headers=admin, json=_plan(dataset, validationDataset="ds-nope"))
    assert resp.status_code == 404
    assert resp.json["error"]["message"] == "dataset ds-nope does not exist"
    assert resp.json["error"]["details"] == {"field": "validationDataset"}
    completion = _upload(client, admin, [{"prompt": "q", "completion": "a"}])
    resp = client.post("/v1/runs", headers=admin, json=_plan(dataset, validationDataset=completion["id"]))
    assert resp.status_code == 400
    assert resp.json["error"]["message"] == (
        f"validation dataset {completion['id']} holds completion rows and dataset {dataset} holds chat rows; "
        "a run validates on rows of its training format")
    resp = client.post("/v1/runs", headers=admin, json=_plan(dataset, validation={"everySteps": 0}))
    assert resp.status_code == 400 and "validation.everySteps" in resp.json["error"]["message"]
    assert client.get("/v1/runs", headers=admin).json["items"] == []
