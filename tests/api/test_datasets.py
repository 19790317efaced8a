import hashlib
import io
import json

import pytest

SAMPLE = b"\n".join(
    json.dumps({"messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]}).encode()
    for i in range(5)
)


def upload(client, headers, data: bytes, **form):
    return client.post("/v1/datasets", headers=headers,
                       data={"file": (io.BytesIO(data), "d.jsonl"), **form}, content_type="multipart/form-data")


def test_upload_list_get(client, admin):
    resp = upload(client, admin, SAMPLE, name="greetings")
    assert resp.status_code == 201, resp.json
    doc = resp.json
    assert doc["id"].startswith("ds-") and doc["rows"] == 5 and doc["format"] == "chat"
    assert doc["name"] == "greetings" and doc["workload"] == "runs" and len(doc["digest"]) == 64
    assert client.get(f"/v1/datasets/{doc['id']}", headers=admin).json == doc
    assert [d["id"] for d in client.get("/v1/datasets", headers=admin).json["items"]] == [doc["id"]]


def test_faults_name_line_and_field_and_store_nothing(client, admin):
    bad = b'{"messages": [{"role": "user", "content": "x"}, {"role": "robot", "content": 3}]}\nnot json\n{"foo": 1}\n'
    resp = upload(client, admin, bad)
    assert resp.status_code == 400
    err = resp.json["error"]
    assert err["code"] == "invalid"
    assert err["message"] == "dataset line 1, field messages[1].role: must be one of system, user, assistant, tool (and 3 more)"
    faults = err["details"]["faults"]
    assert {"line": 1, "field": "messages[1].content", "problem": "must be a string or a list of content parts"} in faults
    assert faults[2]["line"] == 2 and faults[2]["field"] == "(line)"
    assert faults[3] == {"line": 3, "field": "(row)", "problem": (
        "needs messages (chat), prompt and completion, or prompt; Alpaca rows (instruction, input, output) and "
        "ShareGPT rows (conversations of {from, value}) are read as chat rows (it has foo)")}
    assert client.get("/v1/datasets", headers=admin).json["items"] == []


def test_first_twenty_faults_only(client, admin):
    resp = upload(client, admin, b"{}\n" * 30)
    assert len(resp.json["error"]["details"]["faults"]) == 20
    assert resp.json["error"]["details"]["faultCount"] == 30


def test_oversized_upload_is_413(client, admin):
    resp = upload(client, admin, SAMPLE * 10_000)
    assert resp.status_code == 413
    assert resp.json["error"]["code"] == "too_large"
    assert "200000 bytes" in resp.json["error"]["message"]


def test_missing_file_field(client, admin):
    resp = client.post("/v1/datasets", headers=admin, data={}, content_type="multipart/form-data")
    assert resp.status_code == 400
    assert resp.json["error"]["details"] == {"field": "file"}


def test_tokens_see_only_their_workloads(client, admin, team):
    mine = upload(client, team, SAMPLE).json
    assert mine["workload"] == "team-a"
    theirs = upload(client, admin, SAMPLE, workload="other").json
    assert [d["id"] for d in client.get("/v1/datasets", headers=team).json["items"]] == [mine["id"]]
    assert client.get(f"/v1/datasets/{theirs['id']}", headers=team).status_code == 404
    assert upload(client, team, SAMPLE, workload="other").status_code == 403
    assert len(client.get("/v1/datasets", headers=admin).json["items"]) == 2


def test_bad_or_missing_token(client):
    assert client.get("/v1/datasets").json["error"]["code"] == "unauthenticated"
    resp = client.get("/v1/datasets", headers={"Authorization": "Bearer nope"})
    assert resp.status_code == 401 and resp.json["error"]["message"] == "this token is not known to the deployment"


def test_delete_waits_for_its_readers_then_removes_the_rows(client, admin, team, config):
    ds = upload(client, admin, SAMPLE).json
    twin = upload(client, admin, SAMPLE).json  # the same rows: one file, shared by content
    files = sorted(p for p in config.artifact_root.rglob("*") if p.is_file() and ds["digest"] in p.name)
    assert len(files) == 1
    path = files[0]
    run = client.post("/v1/runs", headers=admin, json={"model": "builtin/tiny-qwen3", "dataset": ds["id"],
                                                       "hyperparameters": {"maxSteps": 2}}).json
    resp = client.delete(f"/v1/datasets/{twin['id']}", headers=admin)  # the run reads these rows too
    assert resp.status_code == 409 and resp.json["error"] == {"code": "conflict", "details": {"users": [run["id"]]},
        "message": f"dataset {twin['id']} is still read by run {run['id']} (QUEUED); delete it once they have "
                   "ended (a PAUSED run reads it again when it resumes)"}
    assert client.delete(f"/v1/datasets/{ds['id']}", headers=team).status_code == 404  # not its workload
    client.delete(f"/v1/runs/{run['id']}", headers=admin)  # cancelled: it reads nothing any more
    deleted = client.delete(f"/v1/datasets/{ds['id']}", headers=admin).json
    assert deleted["deleted"] is True and path.is_file()  # its twin still holds the rows
    resp = client.get(f"/v1/datasets/{ds['id']}", headers=admin)
    assert resp.status_code == 404 and resp.json["error"]["message"] == (
        f"dataset {ds['id']} was deleted at {deleted['deletedAt']}; upload its rows again to use them")
    assert [d["id"] for d in client.get("/v1/datasets", headers=admin).json["items"]] == [twin["id"]]
    resp = client.post("/v1/runs", headers=admin, json={"model": "builtin/tiny-qwen3", "dataset": ds["id"]})
    assert resp.status_code == 404 and resp.json["error"]["details"] == {"field": "dataset"}
    assert client.delete(f"/v1/datasets/{twin['id']}", headers=admin).status_code == 200
    assert not path.exists()  # the last live dataset with these rows is gone, and so is the file
    assert client.delete(f"/v1/datasets/{twin['id']}", headers=admin).status_code == 404
    # the cancelled run still names what it trained on
    assert client.get(f"/v1/runs/{run['id']}", headers=admin).json["plan"]["dataset"] == ds["id"]


def test_first_rows_preview_the_stored_rows_within_bounds(client, admin, team):
    """Issue 30: GET /v1/datasets/ID/rows, the dashboard's preview of a dataset."""
    doc = upload(client, admin, SAMPLE).json
    rows = client.get(f"/v1/datasets/{doc['id']}/rows?limit=2", headers=admin)
    assert rows.status_code == 200, rows.json
    assert rows.json == {"dataset": doc["id"], "rows": [json.loads(line) for line in SAMPLE.splitlines()[:2]],
                         "totalRows": 5}
    assert len(client.get(f"/v1/datasets/{doc['id']}/rows", headers=admin).json["rows"]) == 5  # default 5
    for bad in ("0", "21", "two", "1.5"):
        resp = client.get(f"/v1/datasets/{doc['id']}/rows?limit={bad}", headers=admin)
        assert resp.status_code == 400, bad
        assert resp.json["error"]["message"] == "limit must be a whole number from 1 to 20"
        assert resp.json["error"]["details"]["field"] == "limit"
    # another workload's dataset is as unknown as one that never was
    hidden = client.get(f"/v1/datasets/{doc['id']}/rows", headers=team)
    assert hidden.status_code == 404 and hidden.json["error"]["message"] == f"dataset {doc['id']} does not exist"
    client.delete(f"/v1/datasets/{doc['id']}", headers=admin)
    assert client.get(f"/v1/datasets/{doc['id']}/rows", headers=admin).status_code == 404


ALPACA = (b'{"instruction": "Reverse the word", "input": "stone", "output": "enots"}\n'
          b'{"instruction": "Add: 2 + 3", "output": "5", "system": "Be brief.", "answer": "5"}\n')
SHAREGPT = (b'{"conversations": [{"from": "human", "value": "Add: 2 + 3"}, {"from": "gpt", "value": "5"}]}\n'
            b'{"system": "Be brief.", "conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"},'
            b' {"from": "human", "value": "Reverse: ab"}, {"from": "gpt", "value": "ba"}]}\n')


@pytest.mark.parametrize("data, source", [(ALPACA, "alpaca"), (SHAREGPT, "sharegpt")])
def test_alpaca_and_sharegpt_rows_are_accepted_as_chat_rows(client, admin, data, source):
    """Issue 30: the two formats most hub files use are read as chat rows; the file is kept as uploaded."""
    resp = upload(client, admin, data)
    assert resp.status_code == 201, resp.json
    doc = resp.json
    assert doc["format"] == "chat" and doc["convertedFrom"] == source and doc["rows"] == 2
    assert doc["digest"] == hashlib.sha256(data).hexdigest()


def test_alpaca_and_sharegpt_faults_name_the_fields_as_the_file_spells_them(client, admin):
    bad = (b'{"instruction": "", "output": 3}\n'
           b'{"conversations": [{"from": "human", "value": "Hi"}, {"from": "bot", "value": 1}]}\n'
           b'{"conversations": [{"from": "human", "value": "Hi"}]}\n')
    faults = upload(client, admin, bad).json["error"]["details"]["faults"]
    assert faults == [
        {"line": 1, "field": "instruction", "problem": "must be a non-empty string (an Alpaca row's instruction)"},
        {"line": 1, "field": "output", "problem": "must be a string"},
        {"line": 2, "field": "conversations[1].from",
         "problem": "must be one of human, user, gpt, assistant, system, tool, observation"},
        {"line": 2, "field": "conversations[1].value", "problem": "must be a string"},
        {"line": 3, "field": "conversations", "problem": "must end with a gpt (assistant) turn to train on"},
    ]
