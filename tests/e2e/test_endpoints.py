"""Endpoints through every real service: the API, the scheduler, the endpoint manager and the
built-in serving process, answered through the trainer with the official openai client."""

from __future__ import annotations

import json
import time

import pytest
import requests
from openai import OpenAI

from tests.e2e.stack import start_stack, stop_stack
from tests.e2e.test_cli_flow import cli
from tests.e2e.test_run_through_services import upload_sample, wait_terminal


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_url):
    stack = start_stack(tmp_path_factory.mktemp("serving"), redis_url, endpoint_manager=True)
    yield stack
    stop_stack(stack)


@pytest.fixture(scope="module")
def snapshot(stack):
    dataset = upload_sample(stack)
    # Trained on every token: 20 steps on the answers alone (the default) mostly teach the tiny model
    # to end its turn at once, and these tests need an adapter that says something.
    run = stack.post("/v1/runs", json={"model": "builtin/tiny-qwen3", "dataset": dataset,
                                       "hyperparameters": {"maxSteps": 20, "learningRate": 0.003,
                                                           "trainOnPrompt": True}}).json()
    done = wait_terminal(stack, run["id"])
    assert done["status"] == "SUCCEEDED"
    return done["latestSnapshot"]


def phase_is(stack, endpoint_id: str, *phases: str):
    doc = stack.get(f"/v1/endpoints/{endpoint_id}").json()
    return doc if doc["phase"] in phases else None


def test_serve_a_snapshot_and_answer_through_the_trainer(stack, snapshot):
    ep = stack.post("/v1/endpoints", json={"model": "builtin/tiny-qwen3", "snapshot": snapshot, "name": "tuned",
                                           "idleTimeout": 0}).json()
    ready = stack.wait_until("READY", lambda: phase_is(stack, ep["id"], "READY", "FAILED"), timeout_s=120)
    assert ready["phase"] == "READY", ready
    assert ready["address"].startswith("http://127.0.0.1:") and ready["stopsAt"] is None  # idleTimeout 0: never
    # Straight to its port, without the secret only the trainer's proxy sends: refused (and not a request
    # the idle stop would count); the answer shows no secret either
    direct = requests.post(f"{ready['address']}/v1/chat/completions", timeout=30,
                           json={"model": ep["id"], "messages": [{"role": "user", "content": "hi"}]})
    assert direct.status_code == 401 and "apiKey" not in ready["process"]

    client = OpenAI(base_url=f"{stack.api_url}/v1", api_key=stack.token)
    assert [m.id for m in client.models.list().data] == [ep["id"]]
    chat = client.chat.completions.create(model="tuned", messages=[{"role": "user", "content": "Reverse: stone"}],
                                          max_tokens=8, temperature=0)
    assert chat.choices[0].message.content and chat.usage.completion_tokens > 0
    assert chat.model == "tuned"  # the answer names what the client asked for, not a snapshot id
    streamed = list(client.chat.completions.create(
        model=ep["id"], messages=[{"role": "user", "content": "Reverse: stone"}], max_tokens=8, temperature=0,
        stream=True))
    text = "".join(chunk.choices[0].delta.content or "" for chunk in streamed if chunk.choices)
    assert text == chat.choices[0].message.content  # greedy: the same answer, streamed
    assert {chunk.model for chunk in streamed} == {ep["id"]}
    by_name = list(client.chat.completions.create(
        model="tuned", messages=[{"role": "user", "content": "Reverse: stone"}], max_tokens=8, temperature=0,
        stream=True, stream_options={"include_usage": True}))
    assert {chunk.model for chunk in by_name} == {"tuned"} and by_name[-1].usage.completion_tokens > 0
    completion = client.completions.create(model="tuned", prompt="Add: 2 + 3", max_tokens=4, temperature=0)
    assert completion.choices[0].text is not None and completion.model == "tuned"
    assert client.completions.create(model=ep["id"], prompt="Add: 2 + 3", max_tokens=4, temperature=0).model == ep["id"]

    # The serving process answers to the endpoint's id itself (its adapter is loaded under it), and
    # whoever holds its secret (the operator, from the store) may still load adapters into it at run
    # time and ask for them at its address.
    key = stack.serving_key(ep["id"])
    direct = OpenAI(base_url=f"{ready['address']}/v1", api_key=key["Authorization"].split()[1])
    assert {m.id for m in direct.models.list().data} == {ep["id"], "builtin/tiny-qwen3"}
    snap = stack.get(f"/v1/snapshots/{snapshot}").json()
    adapter_dir = stack.artifacts / snap["path"] / ((snap.get("contents") or {}).get("weights") or {}).get(
        "path", "adapter")
    loaded = requests.post(f"{ready['address']}/v1/load_lora_adapter", timeout=60, headers=key,
                           json={"lora_name": "mine", "lora_path": str(adapter_dir)})
    assert loaded.status_code == 200, loaded.text
    mine = direct.chat.completions.create(model="mine", messages=[{"role": "user", "content": "Reverse: stone"}],
                                          max_tokens=8, temperature=0)
    assert mine.model == "mine" and mine.choices[0].message.content == chat.choices[0].message.content
    assert client.chat.completions.create(model="tuned", messages=[{"role": "user", "content": "x"}],
                                          max_tokens=2).model == "tuned"
    after = stack.get(f"/v1/endpoints/{ep['id']}").json()
    assert after["lastRequestAt"] is not None
    log = stack.get(f"/v1/endpoints/{ep['id']}/logs?lines=10000").json()  # the serving process's own log
    assert log["log"] == f"endpoints/{ep['id']}/server.log"
    assert log["lines"][0].startswith("--- ") and "shared.serving.server" in log["lines"][0]

    # the CLI finds a live endpoint by its name as the proxy does
    assert json.loads(cli(stack, "endpoints", "get", "tuned", "-o", "json").stdout)["id"] == ep["id"]
    last_line = cli(stack, "endpoints", "logs", "tuned", "-n", "1").stdout.strip()
    assert last_line and last_line in stack.get(f"/v1/endpoints/{ep['id']}/logs?lines=10000").json()["lines"]
    assert cli(stack, "endpoints", "delete", "tuned").stdout.strip() == f"endpoint {ep['id']}: stopping"
    done = stack.wait_until("TERMINATED", lambda: phase_is(stack, ep["id"], "TERMINATED"), timeout_s=60)
    assert done["detail"] == "stopped by the user" and done["address"] is None
    assert stack.get(f"/v1/endpoints/{ep['id']}/logs?lines=10000").json()["lines"][:1] == log["lines"][:1]  # still
    resp = stack.post("/v1/chat/completions", json={"model": ep["id"], "messages": [{"role": "user", "content": "x"}]})
    assert resp.status_code == 409 and resp.json()["error"]["message"] == (
        f"endpoint {ep['id']} is TERMINATED (stopped by the user) and answers no more requests; "
        "`training endpoints create` starts a new one")


def test_idle_stop_counts_only_requests_through_the_trainer(stack):
    ep = stack.post("/v1/endpoints", json={"model": "builtin/tiny-qwen3", "idleTimeout": 4}).json()
    ready = stack.wait_until("READY", lambda: phase_is(stack, ep["id"], "READY", "FAILED"), timeout_s=120)
    assert ready["phase"] == "READY" and ready["stopsAt"] is not None
    # Requests straight to its address (with its secret) do not count...
    for _ in range(3):
        requests.post(f"{ready['address']}/v1/completions", json={"model": ep["id"], "prompt": "x", "max_tokens": 1},
                      timeout=30, headers=stack.serving_key(ep["id"]))
        time.sleep(1)
    # ...requests through the trainer do, and postpone the stop.
    body = {"model": ep["id"], "prompt": "x", "max_tokens": 1}
    assert stack.post("/v1/completions", json=body).status_code == 200
    postponed = stack.get(f"/v1/endpoints/{ep['id']}").json()
    assert postponed["phase"] == "READY" and postponed["stopsAt"] > ready["stopsAt"]
    done = stack.wait_until("idle stop", lambda: phase_is(stack, ep["id"], "TERMINATED"), timeout_s=60)
    assert "without a request" in done["detail"]
    pool = next(p for p in stack.get("/v1/info").json()["pools"] if p["name"] == "default")
    assert pool["freeGpus"] == 2
