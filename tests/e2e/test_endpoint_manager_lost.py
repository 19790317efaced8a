"""A node's endpoint manager SIGKILLed under a READY endpoint, through every real service (SPEC 6,
"Outliving a restart"): the scheduler notices the missing manager, the endpoint goes back to
STARTING without an address and requests through the trainer are refused with its phase; a manager
started again re-adopts the serving process that kept running (same pid and address).

The thresholds are shortened (a 2 s node lease, 2 s without one before the node counts as lost)
so the test waits seconds, not a minute."""

from __future__ import annotations

import signal

import pytest
from openai import OpenAI

from tests.e2e.stack import start_stack, stop_stack

MANAGER = ["services.endpoint_manager.main", "--node", "local", "--stop-serving-on-exit"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_url):
    stack = start_stack(tmp_path_factory.mktemp("lost-manager"), redis_url, endpoint_manager=True,
                        extra_env={"TRAINING_ENDPOINT_MANAGER_LEASE_S": "2", "TRAINING_WORKER_LOST_AFTER_S": "2"})
    yield stack
    stop_stack(stack)


def phase(stack, endpoint_id: str, *phases: str):
    doc = stack.get(f"/v1/endpoints/{endpoint_id}").json()
    return doc if doc["phase"] in phases else None


def test_a_killed_manager_sends_its_ready_endpoint_back_to_starting_and_the_next_one_adopts_it(stack):
    ep = stack.post("/v1/endpoints", json={"model": "builtin/tiny-qwen3", "idleTimeout": 0,
                                           "startTimeout": 120}).json()
    ready = stack.wait_until("READY", lambda: phase(stack, ep["id"], "READY", "FAILED"), timeout_s=120)
    assert ready["phase"] == "READY", ready
    client = OpenAI(base_url=f"{stack.api_url}/v1", api_key=stack.token, max_retries=0)
    body = dict(model=ep["id"], prompt="Add: 2 + 3", max_tokens=2, temperature=0)
    assert client.completions.create(**body).model == ep["id"]  # a base endpoint answers to its id

    stack.stop("endpoint-manager", sig=signal.SIGKILL)  # its serving process, in a session of its own, runs on
    lost = stack.wait_until("STARTING", lambda: phase(stack, ep["id"], "STARTING"), timeout_s=30)
    assert lost["address"] is None and lost["stopsAt"] is None
    assert lost["scheduling"] == ready["scheduling"] and lost["startingSince"] > ready["readyAt"]
    refused = stack.post("/v1/completions", json=body)
    assert refused.status_code == 409 and refused.json()["error"]["message"] == (
        f"endpoint {ep['id']} is STARTING; it answers requests once READY")
    events = [e["message"] for e in stack.get(f"/v1/endpoints/{ep['id']}/events").json()["items"]]
    assert ("no endpoint manager runs on node local; its serving process is presumed lost until one is back"
            in events)

    stack.start("endpoint-manager", MANAGER)
    again = stack.wait_until("READY again", lambda: phase(stack, ep["id"], "READY", "FAILED"), timeout_s=60)
    assert again["phase"] == "READY" and again["process"] == ready["process"]  # adopted, not restarted
    assert again["address"] == ready["address"]
    assert client.completions.create(**body).choices[0].text is not None
