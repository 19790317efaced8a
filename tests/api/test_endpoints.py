"""Endpoints through the API, without an endpoint manager: creation, validation, stop while
queued, and the proxy refusing endpoints that are not READY. Serving is tested end to end in
tests/e2e/test_endpoints.py."""

import re

from shared.claims.queue import ClaimQueue


def create(client, headers, **body):
    return client.post("/v1/endpoints", headers=headers, json={"model": "builtin/tiny-qwen3", **body})


def test_create_queues_a_claim_of_kind_endpoint(client, admin, app):
    resp = create(client, admin, name="chat", idleTimeout=120)
    assert resp.status_code == 201, resp.json
    ep = resp.json
    assert ep["id"].startswith("ep-") and ep["phase"] == "QUEUED" and ep["address"] is None
    assert ep["workload"] == "endpoints" and ep["idleTimeout"] == 120 and ep["startTimeout"] == 600
    assert ep["stopsAt"] is None
    context = app.extensions["trainer"]
    claim = ClaimQueue(context.redis, context.keys).get(ep["scheduling"]["claim"])
    assert claim["kind"] == "endpoint" and claim["model"] == "builtin/tiny-qwen3" and claim["state"] == "WAITING"
    assert client.get(f"/v1/endpoints/{ep['id']}", headers=admin).json["id"] == ep["id"]
    assert [e["id"] for e in client.get("/v1/endpoints", headers=admin).json["items"]] == [ep["id"]]


def test_defaults_one_hour_idle(client, admin):
    assert create(client, admin).json["idleTimeout"] == 3600


def test_bad_bodies_name_the_field(client, admin):
    resp = create(client, admin, idleTimeout=-1)
    assert resp.status_code == 400 and resp.json["error"]["message"].startswith("endpoint field idleTimeout: ")
    resp = client.post("/v1/endpoints", headers=admin, json={"gpus": 1})
    assert resp.json["error"]["message"] == "endpoint field model: Missing data for required field."
    resp = create(client, admin, model="nope/nope")
    assert resp.status_code == 404 and resp.json["error"]["message"] == "model nope/nope is not in this deployment's catalog"
    resp = create(client, admin, gpus=3)
    assert resp.status_code == 422 and resp.json["error"]["message"] == (
        "this endpoint asks for 3 GPU(s) of one node, and the largest node of pool default has 2")
    resp = create(client, admin, snapshot="snap-nope")
    assert resp.status_code == 404 and resp.json["error"]["message"] == "snapshot snap-nope does not exist"
    resp = create(client, admin, pool="nowhere")  # the one sentence and status of an unknown pool (issue 28)
    assert resp.status_code == 404 and resp.json["error"]["message"] == "pool nowhere does not exist in this deployment"
    assert (resp.json["error"]["details"]["field"], resp.json["error"]["details"]["pool"]) == ("pool", "nowhere")
    assert client.get("/v1/endpoints", headers=admin).json["items"] == []


def test_names_are_unique_among_live_endpoints(client, admin):
    first = create(client, admin, name="chat").json
    resp = create(client, admin, name="chat")
    assert resp.status_code == 409
    assert resp.json["error"]["message"] == f"endpoint name chat is taken by {first['id']} (QUEUED)"
    client.delete(f"/v1/endpoints/{first['id']}", headers=admin)
    assert create(client, admin, name="chat").status_code == 201


def test_the_endpoint_routes_take_a_live_endpoints_name_for_its_id(client, admin, team):
    ep = create(client, admin, name="chat").json
    assert client.get("/v1/endpoints/chat", headers=admin).json["id"] == ep["id"]
    assert client.get("/v1/endpoints/chat/events", headers=admin).json["items"][0]["message"].startswith("queued")
    resp = client.get("/v1/endpoints/chat/logs", headers=admin)  # QUEUED: no serving process yet
    assert resp.status_code == 404 and ep["id"] in resp.json["error"]["message"]
    missing = client.get("/v1/endpoints/chat", headers=team)  # another workload's: as if it did not exist
    assert missing.status_code == 404 and missing.json["error"]["message"] == "endpoint chat does not exist"
    stopped = client.delete("/v1/endpoints/chat", headers=admin).json
    assert stopped["id"] == ep["id"] and stopped["phase"] == "TERMINATED"
    # a stopped endpoint gives its name up: only its id finds it now
    assert client.get("/v1/endpoints/chat", headers=admin).status_code == 404
    assert client.get(f"/v1/endpoints/{ep['id']}", headers=admin).json["phase"] == "TERMINATED"
    again = create(client, admin, name="chat").json
    assert client.get("/v1/endpoints/chat", headers=admin).json["id"] == again["id"] != ep["id"]


def test_a_name_may_not_look_like_an_id(client, admin):
    for name in ("ep-1", "has space", "x" * 65, ""):
        resp = create(client, admin, name=name)
        assert resp.status_code == 400, name
        assert resp.json["error"]["message"] == (
            "endpoint field name: 1 to 64 letters, digits or `_.:-`, not starting with `ep-` (the ids' prefix)")
    assert create(client, admin, name="my-ep-1").status_code == 201


def test_stop_while_queued_terminates_and_releases(client, admin, app):
    ep = create(client, admin).json
    stopped = client.delete(f"/v1/endpoints/{ep['id']}", headers=admin).json
    assert stopped["phase"] == "TERMINATED" and stopped["detail"] == "stopped by the user"
    context = app.extensions["trainer"]
    assert ClaimQueue(context.redis, context.keys).get(ep["scheduling"]["claim"])["state"] == "RELEASED"
    again = client.delete(f"/v1/endpoints/{ep['id']}", headers=admin)
    assert again.status_code == 409


def test_proxy_refuses_an_endpoint_that_is_not_ready_with_its_phase(client, admin, http, api_url):
    ep = create(client, admin, name="later").json
    for model in (ep["id"], "later"):
        resp = http.post(f"{api_url}/v1/chat/completions", headers=admin,
                         json={"model": model, "messages": [{"role": "user", "content": "hi"}]})
        assert resp.status_code == 409
        assert resp.json()["error"]["message"] == f"endpoint {ep['id']} is QUEUED; it answers requests once READY"
    resp = http.post(f"{api_url}/v1/completions", headers=admin, json={"model": "nobody", "prompt": "x"})
    assert resp.status_code == 404
    assert resp.json()["error"]["message"] == "no endpoint has the id or name nobody; `training endpoints get` lists them"
    assert client.get("/v1/models", headers=admin).json == {"object": "list", "data": []}
    client.delete(f"/v1/endpoints/{ep['id']}", headers=admin)  # QUEUED: TERMINATED at once
    resp = http.post(f"{api_url}/v1/completions", headers=admin, json={"model": ep["id"], "prompt": "x"})
    assert resp.status_code == 409 and resp.json()["error"]["details"] == {"phase": "TERMINATED"}
    assert resp.json()["error"]["message"] == (
        f"endpoint {ep['id']} is TERMINATED (stopped by the user) and answers no more requests; "
        "`training endpoints create` starts a new one")


def test_a_queued_endpoint_says_what_it_waits_on(client, admin, dataset, app, config):
    holder = create(client, admin, gpus=2).json
    context = app.extensions["trainer"]
    ClaimQueue(context.redis, context.keys).grant_pass(config, "default")
    waiting = create(client, admin).json
    shown = client.get(f"/v1/endpoints/{waiting['id']}", headers=admin).json["scheduling"]
    assert shown["reason"] == "waiting_for_gpus"
    assert re.fullmatch(rf"held by endpoint {holder['id']} \(builtin/tiny-qwen3, idle \d+s\)", shown["waitingText"])
