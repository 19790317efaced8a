"""Another workload's resources look exactly like resources that do not exist (issue 14).

Workload B's resources are made by the admin token (workloads runs, evaluations, endpoints); the
team token (workloads team-a, small) then walks every route of the API with B's ids, in paths,
bodies and query strings, and with ids of the same kinds that name nothing. Each pair of answers
must be the same, but for the id itself.
"""

from __future__ import annotations

import io
import json

import pytest

from services.api.openapi import ROUTES
from shared import reasons
from shared.store.ids import Kind, new_id
from tests.api.conftest import CHAT_ROWS
from tests.api.test_snapshot_import import snapshot_dir

PATH_KINDS = {"runId": Kind.RUN, "datasetId": Kind.DATASET, "endpointId": Kind.ENDPOINT,
              "evaluationId": Kind.EVALUATION, "snapshotId": Kind.SNAPSHOT, "comparisonId": Kind.COMPARISON}


@pytest.fixture
def theirs(app, client, admin, tmp_path):
    """One of each resource of workload B (made by the admin token, in its default workloads)."""
    def post(path, **kwargs):
        resp = client.post(path, headers=admin, **kwargs)
        assert resp.status_code == 201, resp.json
        return resp.json

    dataset = post("/v1/datasets", data={"file": (io.BytesIO(CHAT_ROWS), "b.jsonl")},
                   content_type="multipart/form-data")
    run = post("/v1/runs", json={"model": "builtin/tiny-qwen3", "dataset": dataset["id"],
                                 "hyperparameters": {"maxSteps": 2}})
    snapshots = [post("/v1/snapshots/import", json={"path": str(snapshot_dir(tmp_path / name))}) for name in "ab"]
    endpoint = post("/v1/endpoints", json={"model": "builtin/tiny-qwen3", "name": "b-judge"})
    evaluation = post("/v1/evaluations", json={"model": "builtin/tiny-qwen3", "dataset": dataset["id"]})
    comparison = post("/v1/comparisons", json={"snapshots": [s["id"] for s in snapshots], "dataset": dataset["id"]})
    return {"runId": run["id"], "datasetId": dataset["id"], "endpointId": endpoint["id"],
            "evaluationId": evaluation["id"], "snapshotId": snapshots[0]["id"], "comparisonId": comparison["id"],
            "otherSnapshotId": snapshots[1]["id"]}


def unknown_ids() -> dict[str, str]:
    return {**{name: new_id(kind) for name, kind in PATH_KINDS.items()}, "otherSnapshotId": new_id(Kind.SNAPSHOT)}


def answer(resp, ids: dict[str, str]) -> tuple[int, object]:
    """The status and the body with the ids used replaced by their names, so that an answer about
    B's run and one about an unknown run compare equal when they say the same."""
    text = resp.get_data(as_text=True)
    for name, value in ids.items():
        text = text.replace(value, "{" + name + "}")
    try:
        body = json.loads(text)
    except ValueError:
        body = text
    return resp.status_code, body


def test_every_route_with_an_id_answers_for_another_workloads_resource_as_for_none(client, team, theirs):
    unknown = unknown_ids()
    walked = []
    for route, operations in ROUTES.items():
        names = [name for name in PATH_KINDS if "{" + name + "}" in route]
        if not names:
            continue
        for method in operations:
            def call(ids):
                path = route
                for name in names:
                    path = path.replace("{" + name + "}", ids[name])
                return answer(client.open(path, method=method.upper(), headers=team, json={}), ids)

            seen, none = call(theirs), call(unknown)
            assert seen == none, f"{method.upper()} {route}: {seen} for workload B's, {none} for none"
            assert seen[0] in (404, 400), (route, seen)
            walked.append(f"{method.upper()} {route}")
    assert len(walked) >= 17  # every route of ROUTES that takes an id in its path


@pytest.mark.parametrize("body", [
    lambda ids: ("/v1/runs", {"model": "builtin/tiny-qwen3", "dataset": ids["datasetId"]}),
    lambda ids: ("/v1/runs", {"model": "builtin/tiny-qwen3", "dataset": ids["datasetId"],
                              "validationDataset": ids["datasetId"]}),
    lambda ids: ("/v1/runs", {"model": "builtin/tiny-qwen3", "dataset": ids["datasetId"],
                              "restore": {"snapshot": ids["snapshotId"], "what": "weights"}}),
    lambda ids: ("/v1/evaluations", {"model": "builtin/tiny-qwen3", "dataset": ids["datasetId"]}),
    lambda ids: ("/v1/evaluations", {"model": "builtin/tiny-qwen3", "dataset": ids["datasetId"],
                                     "snapshot": ids["snapshotId"]}),
    lambda ids: ("/v1/evaluations", {"model": "builtin/tiny-qwen3", "dataset": ids["datasetId"],
                                     "judge": ids["endpointId"]}),
    lambda ids: ("/v1/comparisons", {"snapshots": [ids["snapshotId"], ids["otherSnapshotId"]], "dataset": ids["datasetId"]}),
    lambda ids: ("/v1/endpoints", {"model": "builtin/tiny-qwen3", "snapshot": ids["snapshotId"]}),
])
def test_ids_in_bodies_answer_as_for_none(client, team, theirs, body):
    unknown = unknown_ids()
    answers = []
    for ids in (theirs, unknown):
        path, payload = body(ids)
        answers.append(answer(client.post(path, headers=team, json=payload), ids))
    assert answers[0] == answers[1] and answers[0][0] == 404, answers


def test_a_judge_of_another_workload_by_id_or_name_is_unknown(client, team, theirs):
    plan = {"method": "grpo", "model": "builtin/tiny-qwen3", "dataset": "ds-x",
            "grpo": {"rewards": [{"judge": None}]}}
    prompts = client.post("/v1/datasets", headers=team, data={"file": (io.BytesIO(b'{"prompt": "q", "answer": "a"}'),
                                                                      "p.jsonl")},
                          content_type="multipart/form-data").json["id"]
    plan["dataset"] = prompts
    answers = []
    for judge in (theirs["endpointId"], new_id(Kind.ENDPOINT), "b-judge", "no-such-judge"):
        plan["grpo"]["rewards"][0]["judge"] = judge
        answers.append(answer(client.post("/v1/runs", headers=team, json=plan), {"judge": judge}))
    assert answers[0] == answers[1] == answers[2] == answers[3] and answers[0][0] == 404, answers


def test_an_evaluations_judge_of_another_workload_by_id_or_name_is_unknown(client, team, theirs):
    dataset = client.post("/v1/datasets", headers=team, data={"file": (io.BytesIO(CHAT_ROWS), "a.jsonl")},
                          content_type="multipart/form-data").json["id"]
    answers = []
    for judge in (theirs["endpointId"], new_id(Kind.ENDPOINT), "b-judge", "no-such-judge"):
        body = {"model": "builtin/tiny-qwen3", "dataset": dataset, "judge": judge}
        answers.append(answer(client.post("/v1/evaluations", headers=team, json=body), {"judge": judge}))
    assert answers[0] == answers[1] == answers[2] == answers[3] and answers[0][0] == 404, answers


def test_cursors_and_filters_naming_another_workloads_resources_answer_as_for_none(client, team, theirs):
    unknown = unknown_ids()
    for path in ("/v1/runs?after={runId}", "/v1/datasets?after={datasetId}", "/v1/endpoints?after={endpointId}",
                 "/v1/evaluations?after={evaluationId}", "/v1/snapshots?after={snapshotId}",
                 "/v1/comparisons?after={comparisonId}", "/v1/snapshots?run={runId}",
                 "/v1/evaluations?run={runId}", "/v1/evaluations?comparison={comparisonId}"):
        seen, none = (answer(client.get(path.format(**ids), headers=team), ids) for ids in (theirs, unknown))
        assert seen == none, (path, seen, none)
    status, body = answer(client.get(f"/v1/runs?after={theirs['runId']}", headers=team), theirs)
    assert status == 400 and body["error"]["message"] == reasons.cursor_unknown("{runId}")


def test_an_endpoint_name_another_workload_uses_is_free_for_this_one(app, client, admin, team, http, api_url, theirs):
    mine = client.post("/v1/endpoints", headers=team, json={"model": "builtin/tiny-qwen3", "name": "b-judge",
                                                            "workload": "team-a"})
    assert mine.status_code == 201  # no 409 naming workload B's endpoint
    taken = client.post("/v1/endpoints", headers=team, json={"model": "builtin/tiny-qwen3", "name": "b-judge",
                                                             "workload": "team-a"})
    assert taken.status_code == 409 and taken.json["error"]["details"] == {"field": "name", "endpoint": mine.json["id"]}
    assert client.get("/v1/endpoints/b-judge", headers=team).json["id"] == mine.json["id"]
    assert client.get("/v1/endpoints/b-judge", headers=admin).status_code == 409  # the admin sees both
    resp = http.post(f"{api_url}/v1/completions", headers=admin, json={"model": "b-judge", "prompt": "x"})
    assert resp.status_code == 409 and resp.json()["error"]["message"] == (
        "endpoint name b-judge names live endpoints of workloads endpoints, team-a; use the endpoint's id")
    resp = http.post(f"{api_url}/v1/completions", headers=team, json={"model": "b-judge", "prompt": "x"})
    assert resp.status_code == 409 and resp.json()["error"]["message"] == reasons.endpoint_not_ready(
        mine.json["id"], "QUEUED")  # the team's own, not yet ready


def test_deleting_a_dataset_does_not_name_another_workloads_run_over_the_same_rows(client, admin, team, theirs):
    twin = client.post("/v1/datasets", headers=team, data={"file": (io.BytesIO(CHAT_ROWS), "same.jsonl"),
                                                            "workload": "team-a"},
                       content_type="multipart/form-data").json
    resp = client.delete(f"/v1/datasets/{twin['id']}", headers=team)
    assert resp.status_code == 200 and resp.json["deleted"] is True  # B's run over the same rows is not its business
    assert client.get(f"/v1/datasets/{theirs['datasetId']}", headers=admin).status_code == 200  # B's rows stay
