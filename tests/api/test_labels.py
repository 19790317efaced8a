"""Names and tags of runs, endpoints and datasets (issue 30): stored from the create bodies within
their bounds, and found with ?name= and ?tag=; ?idPrefix= finds the ids a short id starts, within
the caller's workloads only (shared/labels.py, services/api/paging.py)."""

from __future__ import annotations

import io

import pytest

from shared import reasons
from tests.api.conftest import CHAT_ROWS


def _run(client, headers, dataset, **extra):
    body = {"method": "sft", "model": "builtin/tiny-qwen3", "dataset": dataset, **extra}
    resp = client.post("/v1/runs", json=body, headers=headers)
    assert resp.status_code == 201, resp.json
    return resp.json


def _ids(client, headers, query: str, path: str = "/v1/runs") -> list[str]:
    resp = client.get(f"{path}?{query}", headers=headers)
    assert resp.status_code == 200, resp.json
    return [item["id"] for item in resp.json["items"]]


def test_a_runs_name_and_tags_are_stored_shown_and_found(client, admin, dataset):
    a = _run(client, admin, dataset, name="SFT reverse lr 2e-4", tags=["team=nlp", "baseline"])
    b = _run(client, admin, dataset, name="grpo sweep", tags=["team=nlp"])
    c = _run(client, admin, dataset)
    assert (a["name"], a["tags"]) == ("SFT reverse lr 2e-4", ["team=nlp", "baseline"])
    assert client.get(f"/v1/runs/{a['id']}", headers=admin).json["tags"] == ["team=nlp", "baseline"]
    assert "tags" not in a["plan"] and "name" not in a["plan"]  # the run's own, not the plan's
    assert c["tags"] == [] and c["name"] is None
    assert _ids(client, admin, "name=reverse") == [a["id"]]
    assert _ids(client, admin, "name=SWEEP") == [b["id"]]  # any case
    assert _ids(client, admin, "tag=team=nlp") == [b["id"], a["id"]]  # newest first
    assert _ids(client, admin, "tag=team=nlp&tag=baseline") == [a["id"]]  # every tag named
    assert _ids(client, admin, "tag=nothing") == []
    assert _ids(client, admin, "name=sft&tag=team=nlp&status=QUEUED") == [a["id"]]


@pytest.mark.parametrize("extra, field, said", [
    ({"tags": ["bad tag"]}, "tags.0", reasons.TAG_RULE),
    ({"tags": ["-x"]}, "tags.0", reasons.TAG_RULE),
    ({"tags": ["a", "a"]}, "tags", reasons.TAGS_REPEATED),
    ({"tags": [f"t{i}" for i in range(21)]}, "tags", reasons.tags_too_many(20)),
    ({"tags": "baseline"}, "tags", "Not a valid list."),
    ({"name": "x" * 201}, "name", reasons.name_rule(200)),
    ({"name": "two\nlines"}, "name", reasons.name_rule(200)),
])
def test_a_name_or_tags_out_of_bounds_are_refused_naming_the_field(client, admin, dataset, extra, field, said):
    body = {"method": "sft", "model": "builtin/tiny-qwen3", "dataset": dataset, **extra}
    resp = client.post("/v1/runs", json=body, headers=admin)
    assert resp.status_code == 400, resp.json
    assert said in resp.json["error"]["message"] and field in resp.json["error"]["message"]


@pytest.mark.parametrize("query, field, said", [
    ("tag=bad%20tag", "tag", reasons.query_tag_invalid("bad tag")),
    ("name=", "name", reasons.query_name_invalid(200)),
    ("name=" + "x" * 201, "name", reasons.query_name_invalid(200)),
    ("idPrefix=snap-1", "idPrefix", reasons.query_id_prefix_invalid("run", "run")),
    ("idPrefix=run-", "idPrefix", reasons.query_id_prefix_invalid("run", "run")),
])
def test_bad_filters_are_refused_naming_the_parameter(client, admin, query, field, said):
    resp = client.get(f"/v1/runs?{query}", headers=admin)
    assert resp.status_code == 400
    assert resp.json["error"]["message"] == said and resp.json["error"]["details"]["field"] == field


def test_an_id_prefix_finds_only_the_callers_own_ids(client, admin, team, dataset):
    mine = _run(client, admin, dataset)
    theirs = _run(client, admin, dataset, workload="team-a")
    assert _ids(client, admin, f"idPrefix={mine['id'][:12]}") == [mine["id"]]
    assert _ids(client, admin, f"idPrefix={mine['id']}") == [mine["id"]]
    # the team's token finds its own run by prefix, and the admin's workload's as it finds an id that
    # does not exist: not at all
    assert _ids(client, team, f"idPrefix={theirs['id'][:12]}") == [theirs["id"]]
    assert _ids(client, team, f"idPrefix={mine['id'][:12]}") == []


def test_endpoints_and_datasets_take_tags_and_are_found_by_them(client, admin):
    upload = client.post("/v1/datasets", headers=admin, content_type="multipart/form-data",
                         data={"file": (io.BytesIO(CHAT_ROWS), "d.jsonl"), "name": "reverse words",
                               "tags": ["task=reverse", "v2"]})
    assert upload.status_code == 201 and upload.json["tags"] == ["task=reverse", "v2"]
    assert _ids(client, admin, "tag=v2&name=REVERSE", "/v1/datasets") == [upload.json["id"]]
    refused = client.post("/v1/datasets", headers=admin, content_type="multipart/form-data",
                          data={"file": (io.BytesIO(CHAT_ROWS), "d.jsonl"), "tags": "ok,not ok"})
    assert refused.status_code == 400
    assert refused.json["error"]["message"] == reasons.form_field_refused("tags", reasons.TAG_RULE)
    endpoint = client.post("/v1/endpoints", headers=admin, json={"model": "builtin/tiny-qwen3", "name": "chat",
                                                                 "tags": ["demo"]})
    assert endpoint.status_code == 201 and endpoint.json["tags"] == ["demo"]
    assert _ids(client, admin, "tag=demo&name=cha", "/v1/endpoints") == [endpoint.json["id"]]
    assert _ids(client, admin, f"idPrefix={endpoint.json['id'][:11]}", "/v1/endpoints") == [endpoint.json["id"]]
