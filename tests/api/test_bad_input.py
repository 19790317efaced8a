"""Bad input (issue 14): every one a 4xx with the error shape, never a 500, and never a run the API
accepts that the worker then fails. One test per item of the issue; the sentences are
those of shared/reasons/, checked word for word in tests/shared/reasons/test_reasons.py."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

import pytest

from shared import reasons
from shared.schemas.json_values import MAX_DEPTH
from tests.api.conftest import CHAT_ROWS
from tests.api.http_peer import HttpPeer

MODEL = "builtin/tiny-qwen3"
TOO_DEEP = reasons.request_body_refused(None, reasons.json_too_deep(MAX_DEPTH))


def plan(dataset, **hyperparameters) -> dict:
    return {"model": MODEL, "dataset": dataset, "hyperparameters": {"maxSteps": 2, "batchSize": 2,
                                                                    **hyperparameters}}


def error_of(resp) -> dict:
    body = resp.json if not callable(resp.json) else resp.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}, body
    return body["error"]


# --- idleTimeout 10^12 and the bounds of every numeric field

def test_an_idle_timeout_past_any_date_is_refused_and_one_stored_before_still_reads(client, admin, app):
    resp = client.post("/v1/endpoints", headers=admin, json={"model": MODEL, "idleTimeout": 10**12})
    assert resp.status_code == 400
    assert error_of(resp)["message"] == ("endpoint field idleTimeout: Must be greater than or equal to 0 and less "
                                         "than or equal to 2592000.")
    assert error_of(resp)["details"]["field"] == "idleTimeout"
    assert client.post("/v1/endpoints", headers=admin, json={"model": MODEL, "idleTimeout": 30 * 24 * 3600}
                       ).status_code == 201
    # a document stored before the bound: READY with it, it reads (no stopsAt: it never idles out)
    ep = client.post("/v1/endpoints", headers=admin, json={"model": MODEL}).json
    stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    app.extensions["trainer"].store.update(ep["id"], lambda d: {
        **d, "phase": "READY", "address": "http://127.0.0.1:9", "readyAt": stamp, "idleTimeout": 10**12})
    shown = client.get(f"/v1/endpoints/{ep['id']}", headers=admin)
    assert shown.status_code == 200 and shown.json["idleTimeout"] == 10**12 and shown.json["stopsAt"] is None
    listed = client.get("/v1/endpoints", headers=admin)
    assert listed.status_code == 200 and ep["id"] in [e["id"] for e in listed.json["items"]]
    assert client.get("/v1/endpoints?phase=READY", headers=admin).status_code == 200
    assert client.delete(f"/v1/endpoints/{ep['id']}", headers=admin).json["stopRequested"] is True


@pytest.mark.parametrize("where, value, field", [
    ("hyperparameters", {"maxSteps": 3.5}, "hyperparameters.maxSteps"),
    ("hyperparameters", {"maxSteps": "3"}, "hyperparameters.maxSteps"),
    ("hyperparameters", {"maxSteps": True}, "hyperparameters.maxSteps"),
    ("hyperparameters", {"maxSteps": 10**7 + 1}, "hyperparameters.maxSteps"),
    ("hyperparameters", {"maxSteps": None, "epochs": 1e300}, "hyperparameters.epochs"),
    ("hyperparameters", {"seed": -1}, "hyperparameters.seed"),
    ("hyperparameters", {"seed": 2**70}, "hyperparameters.seed"),
    ("hyperparameters", {"seed": 2**32}, "hyperparameters.seed"),
    ("hyperparameters", {"warmupSteps": 10**8}, "hyperparameters.warmupSteps"),
    ("hyperparameters", {"batchSize": 2.0}, "hyperparameters.batchSize"),
    ("hyperparameters", {"maxSeqLength": 2**40}, "hyperparameters.maxSeqLength"),
    ("hyperparameters", {"learningRate": 0}, "hyperparameters.learningRate"),
    ("adapter", {"rank": 1025}, "adapter.rank"),
    ("adapter", {"rank": 8.5}, "adapter.rank"),
    ("adapter", {"alpha": 1e300}, "adapter.alpha"),
    ("execution", {"gpus": 1.5}, "execution.gpus"),
    ("snapshots", {"everySteps": 10**12}, "snapshots.everySteps"),
    ("validation", {"everySteps": 0.5}, "validation.everySteps"),
    ("grpo", {"temperature": 1e9}, "grpo.temperature"),
    ("grpo", {"klPenalty": 1e300}, "grpo.klPenalty"),
    ("grpo", {"numGenerations": 4.0}, "grpo.numGenerations"),
])
def test_every_numeric_field_of_a_plan_is_bounded_and_integers_are_whole(client, admin, dataset, where, value,
                                                                         field):
    body = plan(dataset)
    body[where] = {**body.get(where, {}), **value}
    if where == "grpo":
        body["method"] = "grpo"
    resp = client.post("/v1/runs", headers=admin, json=body)
    assert resp.status_code == 400, resp.json
    assert error_of(resp)["message"].startswith(f"plan field {field}: ")
    assert field in error_of(resp)["details"]["fields"]
    assert client.get("/v1/runs", headers=admin).json["items"] == []


def test_the_bounds_hold_for_endpoints_and_evaluations_too(client, admin, dataset):
    for body, field in (({"gpus": 1.5}, "gpus"), ({"startTimeout": 10**12}, "startTimeout"),
                        ({"idleTimeout": 2.5}, "idleTimeout"), ({"startTimeout": 0}, "startTimeout")):
        resp = client.post("/v1/endpoints", headers=admin, json={"model": MODEL, **body})
        assert resp.status_code == 400 and error_of(resp)["details"]["field"] == field, body
    for body, field in (({"maxTokens": 3.5}, "maxTokens"), ({"gpus": 2**70}, "gpus")):
        resp = client.post("/v1/evaluations", headers=admin, json={"model": MODEL, "dataset": dataset, **body})
        assert resp.status_code == 400 and error_of(resp)["details"]["field"] == field, body


def test_epochs_that_make_more_steps_than_a_run_trains_are_refused(client, admin, dataset):
    body = plan(dataset, maxSteps=None, epochs=10_000, batchSize=1)
    ok = client.post("/v1/runs", headers=admin, json=body)
    assert ok.status_code == 201  # 4 rows x 10000 epochs: 40000 steps
    rows = b"\n".join([CHAT_ROWS] * 300)  # 1200 rows: 12 million steps
    big = client.post("/v1/datasets", headers=admin, data={"file": (io.BytesIO(rows), "big.jsonl")},
                      content_type="multipart/form-data").json["id"]
    resp = client.post("/v1/runs", headers=admin, json={**body, "dataset": big})
    assert resp.status_code == 400 and error_of(resp)["details"]["field"] == "hyperparameters.epochs"
    assert error_of(resp)["message"] == "plan field hyperparameters.epochs: " + reasons.epochs_too_many_steps(
        epochs=10_000, rows=1200, batch_size=1, steps=12_000_000, max_steps=10_000_000)


# --- deep nesting, huge log indexes, a 100,000 character import path

def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 900, 50_000])  # 50,000: past Python's recursion limit
def test_deeply_nested_bodies_are_a_400_on_every_json_route(client, admin, http, api_url, depth):
    body = '{"model": "x", "nested": ' + nested(depth) + "}"
    for route in ("/v1/runs", "/v1/endpoints", "/v1/evaluations", "/v1/comparisons", "/v1/snapshots/import"):
        resp = client.post(route, headers=admin, data=body, content_type="application/json")
        assert resp.status_code == 400, (route, resp.json)
        assert error_of(resp) == {"code": "invalid", "message": TOO_DEEP, "details": {"field": "(body)"}}
    for route in ("/v1/chat/completions", "/v1/completions"):  # the asyncio proxy, outside Flask
        resp = http.post(f"{api_url}{route}", headers={**admin, "Content-Type": "application/json"}, data=body)
        assert resp.status_code == 400 and error_of(resp)["message"] == TOO_DEEP


def test_rows_nested_too_deep_are_refused_at_upload(client, admin):
    for depth in (MAX_DEPTH, 50_000):  # the row object itself is a level
        row = '{"prompt": "q", "answer": "a", "extra": ' + nested(depth) + "}"
        resp = client.post("/v1/datasets", headers=admin, data={"file": (io.BytesIO(row.encode()), "deep.jsonl")},
                           content_type="multipart/form-data")
        assert resp.status_code == 400
        assert error_of(resp)["message"] == f"dataset line 1, field (line): {reasons.json_too_deep(MAX_DEPTH)}"
    row = '{"prompt": "q", "answer": "a", "extra": ' + nested(MAX_DEPTH - 1) + "}"
    assert client.post("/v1/datasets", headers=admin, data={"file": (io.BytesIO(row.encode()), "ok.jsonl")},
                       content_type="multipart/form-data").status_code == 201


@pytest.mark.parametrize("after", [str(2**63), str(2**64 + 5), str(2**32), "9" * 40, "²", "-1", "1.5", " 1"])
def test_a_log_index_past_what_redis_holds_is_a_400(client, admin, dataset, after):
    run = client.post("/v1/runs", headers=admin, json=plan(dataset)).json
    endpoint = client.post("/v1/endpoints", headers=admin, json={"model": MODEL}).json
    for route in (f"/v1/runs/{run['id']}/events", f"/v1/runs/{run['id']}/metrics",
                  f"/v1/endpoints/{endpoint['id']}/events"):
        resp = client.get(route, headers=admin, query_string={"after": after})
        assert resp.status_code == 400, (route, resp.json)
        assert error_of(resp) == {"code": "invalid", "message": reasons.log_after_invalid(after, 2**32 - 1),
                                  "details": {"field": "after", "maximum": 2**32 - 1}}
    last = client.get(f"/v1/runs/{run['id']}/events", headers=admin, query_string={"after": str(2**32 - 1)})
    assert last.status_code == 200 and last.json["items"] == []


@pytest.mark.parametrize("path", ["/" + "a" * 100_000, "/" + "a/" * 3000, "/tmp/" + "x" * 256])
def test_an_import_path_no_file_could_have_is_a_400(client, admin, path):
    resp = client.post("/v1/snapshots/import", headers=admin, json={"path": path})
    assert resp.status_code == 400
    assert error_of(resp) == {"code": "invalid", "message": reasons.snapshot_import_path_too_long(4096, 255),
                              "details": {"field": "path", "maxBytes": 4096}}


# --- refused at submission or upload instead of failing in the worker

def test_target_modules_the_model_does_not_have_are_refused_at_submission(client, admin, dataset):
    body = plan(dataset)
    body["adapter"] = {"targetModules": ["q_proj", "c_attn", "nope"]}
    resp = client.post("/v1/runs", headers=admin, json=body)
    assert resp.status_code == 400
    modules = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    assert error_of(resp) == {"code": "invalid", "message": "plan field adapter.targetModules: " + (
        reasons.target_modules_unknown(model=MODEL, unknown=["c_attn", "nope"], modules=modules)),
        "details": {"field": "adapter.targetModules", "unknown": ["c_attn", "nope"], "modules": modules}}
    for targets in (["q_proj", "v_proj"], "all-linear"):
        body["adapter"] = {"targetModules": targets}
        assert client.post("/v1/runs", headers=admin, json=body).status_code == 201


def test_rows_with_a_lone_surrogate_are_refused_at_upload_naming_line_and_field(client, admin):
    rows = (json.dumps({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]})
            + "\n" + '{"messages": [{"role": "user", "content": "q\\ud800"}, {"role": "assistant", "content": "a"}]}'
            + "\n")
    resp = client.post("/v1/datasets", headers=admin, data={"file": (io.BytesIO(rows.encode()), "s.jsonl")},
                       content_type="multipart/form-data")
    assert resp.status_code == 400
    error = error_of(resp)
    assert error["message"] == f"dataset line 2, field messages[0].content: {reasons.lone_surrogate(0xD800)}"
    assert error["details"]["faults"] == [{"line": 2, "field": "messages[0].content",
                                           "problem": reasons.lone_surrogate(0xD800)}]
    paired = rows.replace("\\ud800", "\\ud83d\\ude00")  # a pair is text (an emoji)
    assert client.post("/v1/datasets", headers=admin, data={"file": (io.BytesIO(paired.encode()), "p.jsonl")},
                       content_type="multipart/form-data").status_code == 201


def test_a_body_with_a_lone_surrogate_is_refused_naming_the_field(client, admin, dataset):
    body = json.dumps(plan(dataset)).replace('"model"', '"name": "run \\udc00", "model"')
    resp = client.post("/v1/runs", headers=admin, data=body, content_type="application/json")
    assert resp.status_code == 400
    assert error_of(resp) == {"code": "invalid", "details": {"field": "name"},
                              "message": reasons.request_body_refused("name", reasons.lone_surrogate(0xDC00))}


# --- JSONL lines are split at "\n" only

def test_jsonl_with_line_separators_inside_strings_is_accepted(client, admin):
    rows = "".join(json.dumps({"messages": [{"role": "user", "content": f"one\u2028two\u2029three\x85{i}"},
                                            {"role": "assistant", "content": "a\u2028b"}]}, ensure_ascii=False) + "\r\n"
                   for i in range(3))
    resp = client.post("/v1/datasets", headers=admin, data={"file": (io.BytesIO(rows.encode()), "u.jsonl")},
                       content_type="multipart/form-data")
    assert resp.status_code == 201, resp.json
    assert resp.json["rows"] == 3 and resp.json["format"] == "chat"


# --- endpoint names and fields, ?status=, 405, a serving process's errors

@pytest.mark.parametrize("name, problem", [
    ("chat\n", "1 to 64 letters, digits or `_.:-`, not starting with `ep-` (the ids' prefix)"),
    (".", reasons.ENDPOINT_NAME_DOTS),
    ("..", reasons.ENDPOINT_NAME_DOTS),
])
def test_endpoint_names_refuse_a_trailing_newline_and_dots(client, admin, name, problem):
    resp = client.post("/v1/endpoints", headers=admin, json={"model": MODEL, "name": name})
    assert resp.status_code == 400
    assert error_of(resp)["message"] == f"endpoint field name: {problem}"
    assert error_of(resp)["details"]["field"] == "name"
    assert client.post("/v1/endpoints", headers=admin, json={"model": MODEL, "name": "..."}).status_code == 201


def test_errors_about_an_endpoints_fields_name_that_field(client, admin, team):
    cases = [
        ({"model": "nope/nope"}, 404, "model"),
        ({"snapshot": "snap-nope"}, 404, "snapshot"),
        ({"gpus": 3}, 422, "gpus"),
        ({"gpus": 2, "workload": "small"}, 422, "gpus"),  # the quota of workload small is 1 GPU
        ({"pool": "nowhere"}, 404, "pool"),  # an unknown pool is a 404 wherever it is named (issue 28)
        ({"workload": "team-b"}, 403, "workload"),
        ({"workload": "x\n"}, 400, "workload"),
        ({"idleTimeout": "soon"}, 400, "idleTimeout"),
    ]
    for body, status, field in cases:
        resp = client.post("/v1/endpoints", headers=team if "workload" in body and body["workload"] == "team-b"
                           else admin, json={"model": MODEL, **body})
        assert resp.status_code == status and error_of(resp)["details"]["field"] == field, (body, resp.json)


@pytest.mark.parametrize("route, param, what", [
    ("/v1/runs", "status", "runs"), ("/v1/evaluations", "status", "evaluations"),
    ("/v1/comparisons", "status", "comparisons"), ("/v1/endpoints", "status", "endpoints"),
    ("/v1/endpoints", "phase", "endpoints"),
])
def test_an_empty_status_filter_is_a_400_not_an_unfiltered_list(client, admin, dataset, route, param, what):
    client.post("/v1/runs", headers=admin, json=plan(dataset))
    client.post("/v1/endpoints", headers=admin, json={"model": MODEL})
    for empty in ("", ",", " , "):
        resp = client.get(route, headers=admin, query_string={param: empty})
        assert resp.status_code == 400, (route, resp.json)
        error = error_of(resp)
        assert error["message"] == reasons.status_empty(what, error["details"]["statuses"], param=param)
        assert error["details"]["field"] == param
    assert client.get("/v1/datasets?status=", headers=admin).json["error"]["message"] == (
        reasons.list_has_no_status("datasets"))


def test_a_405_says_which_methods_the_route_takes(client, admin, http, api_url):
    resp = client.put("/v1/runs", headers=admin)
    assert resp.status_code == 405 and set(resp.headers["Allow"].split(", ")) == {"GET", "HEAD", "OPTIONS", "POST"}
    assert error_of(resp)["code"] == "method_not_allowed"
    resp = client.get("/v1/snapshots/import", headers=admin)  # not a lookup of snapshot "import"
    assert resp.status_code == 405 and set(resp.headers["Allow"].split(", ")) == {"OPTIONS", "POST"}
    resp = http.get(f"{api_url}/v1/chat/completions", headers=admin)  # the proxy's own 405
    assert resp.status_code == 405 and resp.headers["Allow"] == "POST"
    assert error_of(resp) == {"code": "method_not_allowed", "details": {},
                              "message": reasons.route_unknown("GET", "/v1/chat/completions")}


@pytest.fixture
def peer():
    peer = HttpPeer()
    yield peer
    peer.close()


def test_a_serving_processs_errors_reach_the_client_in_the_documented_shape(http, api_url, admin, app, client,
                                                                              peer):
    ep = client.post("/v1/endpoints", headers=admin, json={"model": MODEL, "name": "refuser"}).json
    stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    app.extensions["trainer"].store.update(ep["id"], lambda d: {
        **d, "phase": "READY", "address": peer.url, "readyAt": stamp, "servedModel": "served"})
    peer.completions = "refuse"
    for stream in (False, True):
        resp = http.post(f"{api_url}/v1/completions", headers=admin,
                         json={"model": "refuser", "prompt": "x", "max_tokens": 5000, "stream": stream})
        assert resp.status_code == 400 and resp.headers["X-Trainer-Endpoint"] == ep["id"]
        assert error_of(resp) == {"code": "invalid", "message": "The model `served` cannot take max_tokens 5000",
                                  "details": {"endpoint": ep["id"], "status": 400, "type": "BadRequestError",
                                              "param": "max_tokens"}}
    peer.completions = "fail"
    resp = http.post(f"{api_url}/v1/chat/completions", headers=admin, json={"model": ep["id"], "messages": []})
    assert resp.status_code == 502
    assert error_of(resp) == {"code": "bad_gateway", "details": {"endpoint": ep["id"], "status": 500},
                              "message": reasons.endpoint_process_failed(
                                  ep["id"], reasons.endpoint_answer_unreadable(ep["id"], 500))}


# --- Numbers (issue 26): a string is no number, no number is NaN, none has 5,000 digits

@pytest.mark.parametrize("where, value, field", [
    ("hyperparameters", {"learningRate": "0.1"}, "hyperparameters.learningRate"),
    ("hyperparameters", {"maxSteps": None, "epochs": "1"}, "hyperparameters.epochs"),
    ("adapter", {"alpha": "16"}, "adapter.alpha"),
    ("adapter", {"dropout": "0.1"}, "adapter.dropout"),
    ("grpo", {"klPenalty": "0"}, "grpo.klPenalty"),
    ("grpo", {"temperature": "1.0"}, "grpo.temperature"),
    ("grpo", {"rewards": [{"function": "length", "target": 8, "weight": "1"}]}, "grpo.rewards.0.weight"),
])
def test_a_number_field_refuses_a_number_written_as_a_string(client, admin, dataset, where, value, field):
    body = plan(dataset)
    body[where] = {**body.get(where, {}), **value}
    if where == "grpo":
        body["method"] = "grpo"
        body["hyperparameters"]["batchSize"] = 4
    resp = client.post("/v1/runs", headers=admin, json=body)
    assert resp.status_code == 400, resp.json
    assert error_of(resp)["message"] == f"plan field {field}: {reasons.NUMBER_NOT_A_STRING}"
    assert reasons.NUMBER_NOT_A_STRING == "must be a JSON number, not a string"
    assert client.get("/v1/runs", headers=admin).json["items"] == []
    if where != "grpo":  # the same plan with the number as a number is a run
        body[where] = {k: (float(v) if isinstance(v, str) else v) for k, v in body[where].items()}
        assert client.post("/v1/runs", headers=admin, json=body).status_code == 201


@pytest.mark.parametrize("token, problem", [
    ("9" * 5000, reasons.number_too_long(5000, 4300)),
    ("-" + "9" * 4301, reasons.number_too_long(4301, 4300)),
    ("NaN", reasons.number_not_finite("NaN")),
    ("Infinity", reasons.number_not_finite("Infinity")),
    ("-1e999", reasons.number_not_finite("-1e999")),
])
def test_a_number_json_cannot_hold_is_a_400_naming_its_field(client, admin, dataset, http, api_url, token, problem):
    body = json.dumps(plan(dataset, maxSteps=0)).replace('"maxSteps": 0', f'"maxSteps": {token}')
    resp = client.post("/v1/runs", headers=admin, data=body, content_type="application/json")
    assert resp.status_code == 400 and error_of(resp) == {
        "code": "invalid", "details": {"field": "hyperparameters.maxSteps"},
        "message": reasons.request_body_refused("hyperparameters.maxSteps", problem)}
    chat = '{"model": "x", "messages": [], "max_tokens": ' + token + "}"  # the asyncio proxy reads it alike
    resp = http.post(f"{api_url}/v1/chat/completions", headers={**admin, "Content-Type": "application/json"},
                     data=chat)
    assert resp.status_code == 400 and error_of(resp)["message"] == reasons.request_body_refused("max_tokens", problem)
    assert reasons.number_not_finite("NaN") == "is NaN, which is not a finite number; every number must be finite"
    assert reasons.number_too_long(5000, 4300) == "is a whole number of 5000 digits; a number may have at most 4300"


def test_rows_holding_numbers_json_cannot_hold_are_refused_at_upload_naming_line_and_field(client, admin):
    rows = "\n".join([
        '{"prompt": "q", "answer": 1}',
        '{"prompt": "q", "answer": NaN}',
        '{"prompt": "q", "scores": [1, Infinity]}',
        '{"prompt": "q", "answer": 1e400}',
        '{"prompt": "q", "answer": ' + "1" * 5000 + "}",
    ]).encode()
    resp = client.post("/v1/datasets", headers=admin, data={"file": (io.BytesIO(rows), "n.jsonl")},
                       content_type="multipart/form-data")
    assert resp.status_code == 400
    assert error_of(resp)["details"]["faults"] == [
        {"line": 2, "field": "answer", "problem": reasons.number_not_finite("NaN")},
        {"line": 3, "field": "scores[1]", "problem": reasons.number_not_finite("Infinity")},
        {"line": 4, "field": "answer", "problem": reasons.number_not_finite("1e400")},
        {"line": 5, "field": "answer", "problem": reasons.number_too_long(5000, 4300)},
    ]
    assert error_of(resp)["message"] == (
        "dataset line 2, field answer: is NaN, which is not a finite number; every number must be finite "
        "(and 3 more)")


# --- The document declares every nested object's shape (issue 26): `"restore": {}` is not a plan

def test_an_optional_nested_object_is_its_schema_or_null_in_the_document_and_the_server_agrees(client, admin,
                                                                                                dataset):
    from tests.api.openapi_check import problems

    document = client.get("/v1/openapi.json").json
    schema = {"$ref": "#/components/schemas/Plan"}
    base = {"model": MODEL, "dataset": dataset}
    for nested_field in ("restore", "grpo"):
        assert problems(document, schema, {**base, nested_field: None}) == []
        assert problems(document, schema, {**base, nested_field: {"nothing": 1}}) != []
    assert problems(document, schema, {**base, "restore": {}}) != []
    resp = client.post("/v1/runs", headers=admin, json={**base, "restore": {}})
    assert resp.status_code == 400 and error_of(resp)["details"]["fields"] == {
        "restore.snapshot": ["Missing data for required field."], "restore.what": ["Missing data for required field."]}
    any_object = [where for where, node in _walk(document) if node == {"type": "object", "nullable": True}]
    assert any_object == []  # no optional nested field accepts any object


def _walk(node, where="#"):
    if isinstance(node, dict):
        yield where, node
        for key, value in node.items():
            yield from _walk(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, f"{where}/{i}")
