"""Query parameters that name a workload, a resource or a file (issue 26): a value no such thing
could have is a 400 naming the parameter, never an answer as if it named something that is not
there (`?workload=../../x` answered 200 with an empty list). The rules are shared/schemas/names.py's, the
ones the deployment config and the request bodies hold the same names to."""

from __future__ import annotations

import io

import pytest

from shared import reasons
from shared.schemas.names import FILE_NAME_MAX
from shared.store.ids import Kind, new_id
from tests.api.conftest import CHAT_ROWS
from tests.api.test_bad_input import error_of
from tests.api.test_snapshot_import import snapshot_dir

LISTS = ["/v1/runs", "/v1/datasets", "/v1/snapshots", "/v1/evaluations", "/v1/comparisons", "/v1/endpoints"]
NOT_WORKLOADS = ["../../x", "", "a b", "x" * 65, "team-a/..", "caf\u00e9", "x\n"]


@pytest.mark.parametrize("route", LISTS)
def test_a_workload_filter_no_workload_could_have_is_a_400_naming_it(client, admin, route):
    for value in NOT_WORKLOADS:
        resp = client.get(route, headers=admin, query_string={"workload": value})
        assert resp.status_code == 400, (route, value, resp.json)
        assert error_of(resp) == {"code": "invalid", "message": reasons.query_workload_invalid("workload"),
                                  "details": {"field": "workload"}}
    resp = client.get(route, headers=admin, query_string={"workload": "no-such-workload"})
    assert resp.status_code == 200 and resp.json["items"] == []  # a workload's name: nothing of it, as asked


@pytest.mark.parametrize("route, param, kind, what", [
    ("/v1/snapshots", "run", Kind.RUN, "run"),
    ("/v1/evaluations", "run", Kind.RUN, "run"),
    ("/v1/evaluations", "comparison", Kind.COMPARISON, "comparison"),
    *((route, "after", kind, what) for route, kind, what in [
        ("/v1/runs", Kind.RUN, "run"), ("/v1/datasets", Kind.DATASET, "dataset"),
        ("/v1/snapshots", Kind.SNAPSHOT, "snapshot"), ("/v1/evaluations", Kind.EVALUATION, "evaluation"),
        ("/v1/comparisons", Kind.COMPARISON, "comparison"), ("/v1/endpoints", Kind.ENDPOINT, "endpoint")]),
])
def test_a_filter_or_cursor_naming_no_possible_id_is_a_400_naming_it(client, admin, route, param, kind, what):
    other = Kind.DATASET if kind != Kind.DATASET else Kind.RUN
    for value in ["../../x", f"{kind.value}-../x", f"{kind.value}-", new_id(other), f"{kind.value}-" + "a" * 65,
                  f"{kind.value}-a b", *([""] if param != "after" else [])]:
        resp = client.get(route, headers=admin, query_string={param: value})
        assert resp.status_code == 400, (route, param, value, resp.json)
        assert error_of(resp) == {"code": "invalid", "message": reasons.query_id_invalid(param, what, kind.value),
                                  "details": {"field": param}}
    resp = client.get(route, headers=admin, query_string={param: new_id(kind)})
    if param == "after":  # the shape of a cursor, not one this list gave
        assert resp.status_code == 400 and error_of(resp)["message"] == reasons.cursor_unknown(resp.request.args["after"])
    else:
        assert resp.status_code == 200 and resp.json["items"] == []


def test_an_empty_cursor_is_the_first_page_as_before(client, admin):
    assert client.get("/v1/runs?after=", headers=admin).status_code == 200


def test_an_archive_import_names_its_file_and_workload_by_the_rules(client, admin, tmp_path):
    import tarfile

    archive = tmp_path / "snap.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(snapshot_dir(tmp_path / "s"), arcname="s")
    body = archive.read_bytes()
    headers = {**admin, "Content-Type": "application/x-tar"}
    for name in ["../etc/passwd", "", "a\nb", ".", "..", "x" * (FILE_NAME_MAX + 1)]:
        resp = client.post("/v1/snapshots/import", headers=headers, query_string={"name": name}, data=body)
        assert resp.status_code == 400 and error_of(resp) == {
            "code": "invalid", "message": reasons.query_file_name_invalid("name", FILE_NAME_MAX),
            "details": {"field": "name"}}, (name, resp.json)
    resp = client.post("/v1/snapshots/import", headers=headers, query_string={"workload": "../../x"}, data=body)
    assert resp.status_code == 400 and error_of(resp)["details"] == {"field": "workload"}
    resp = client.post("/v1/snapshots/import", headers=headers, query_string={"name": "my snap.tar"}, data=body)
    assert resp.status_code == 201, resp.json


def test_the_document_declares_the_rules(client):
    from shared.schemas.names import WORKLOAD_PATTERN, cursor_pattern, id_pattern

    spec = client.get("/v1/openapi.json").json
    for path in LISTS:
        params = {p["name"]: p["schema"] for p in spec["paths"][path]["get"]["parameters"]}
        assert params["workload"]["pattern"] == WORKLOAD_PATTERN and params["after"]["pattern"] == cursor_pattern()
    evaluations = {p["name"]: p["schema"] for p in spec["paths"]["/v1/evaluations"]["get"]["parameters"]}
    assert evaluations["run"]["pattern"] == id_pattern("run") and evaluations["comparison"]["pattern"] == (
        id_pattern("cmp"))


def test_a_dataset_upload_form_workload_is_held_to_the_rule_too(client, admin):
    resp = client.post("/v1/datasets", headers=admin, data={"file": (io.BytesIO(CHAT_ROWS), "d.jsonl"),
                                                            "workload": "../../x"}, content_type="multipart/form-data")
    assert resp.status_code == 400 and error_of(resp)["details"] == {"field": "workload"}
