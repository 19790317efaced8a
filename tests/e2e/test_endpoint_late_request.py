"""Requests through the trainer that arrive as an endpoint stops, or as its serving process dies
(SPEC 6), through every real service: the API, the scheduler, the endpoint manager and the
built-in serving process.

Both races are made deterministic by pausing the endpoint manager (SIGSTOP to its process) at the
moment that matters, instead of hoping a request lands between two of its passes:

- stopped: the endpoint is READY; the manager is paused; `DELETE /v1/endpoints/ID` sets
  `stopRequested` (the API only writes the flag; ending the endpoint is the manager's work, which
  is paused), so the endpoint is READY with `stopRequested` for as long as the test needs: exactly
  the window in which a request "arrives as it stops". A request then is refused with
  `endpoint ID was stopped before this request reached it` (409, `endpoint_stopped`). Resumed, the
  manager ends it (TERMINATED, `stopped by the user`) and later requests are refused with its phase.
- process lost: the endpoint is READY; the manager is paused; its serving process is SIGKILLed.
  The document still says READY at its address, so the API reads it and forwards: the connection
  is refused, and the request is refused as one to an endpoint that is not READY is (409 with the
  phase sentence, `endpoint ID is STARTING; it answers requests once READY`), never a 502: the
  proxy marks the endpoint STARTING (shared/lifecycle/endpoints.process_gone), so the requests
  after it are refused at once. Resumed, the manager sees the process gone, starts another (it
  does not fail the endpoint for a process that "ended before it was ready") and it is READY again.

And without pausing anything: the serving process SIGKILLed while requests keep coming, twice;
every answer is 200 or the phase sentence, and the time until it answers again is measured.
"""

from __future__ import annotations

import collections
import os
import signal
import time
from contextlib import contextmanager

import pytest
import requests

from tests.e2e.stack import start_stack, stop_stack

REQUEST_TIMEOUT_S = 30


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_url):
    stack = start_stack(tmp_path_factory.mktemp("late"), redis_url, endpoint_manager=True)
    yield stack
    stop_stack(stack)


def phase_is(stack, endpoint_id: str, *phases: str):
    doc = stack.get(f"/v1/endpoints/{endpoint_id}").json()
    return doc if doc["phase"] in phases else None


def ready_endpoint(stack) -> dict:
    ep = stack.post("/v1/endpoints", json={"model": "builtin/tiny-qwen3", "idleTimeout": 0}).json()
    ready = stack.wait_until("READY", lambda: phase_is(stack, ep["id"], "READY", "FAILED"), timeout_s=120)
    assert ready["phase"] == "READY", ready
    return ready


@contextmanager
def manager_paused(stack):
    """The endpoint manager frozen (SIGSTOP) for the block: it reads and writes nothing meanwhile."""
    pid = stack.processes["endpoint-manager"].pid
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def completion(stack, endpoint_id: str) -> requests.Response:
    return requests.post(f"{stack.api_url}/v1/completions", headers=stack.headers(), timeout=REQUEST_TIMEOUT_S,
                         json={"model": endpoint_id, "prompt": "x", "max_tokens": 1, "temperature": 0})


def chat(stack, endpoint_id: str) -> requests.Response:
    return requests.post(f"{stack.api_url}/v1/chat/completions", headers=stack.headers(), timeout=REQUEST_TIMEOUT_S,
                         json={"model": endpoint_id, "messages": [{"role": "user", "content": "x"}], "max_tokens": 1})


def test_request_that_arrives_as_the_endpoint_stops_is_refused(stack):
    ep = ready_endpoint(stack)
    assert completion(stack, ep["id"]).status_code == 200
    last_request = stack.get(f"/v1/endpoints/{ep['id']}").json()["lastRequestAt"]
    assert last_request is not None

    with manager_paused(stack):
        stopped = requests.delete(f"{stack.api_url}/v1/endpoints/{ep['id']}", headers=stack.headers(),
                                  timeout=REQUEST_TIMEOUT_S).json()
        assert stopped["phase"] == "READY" and stopped["stopRequested"] is True  # not ended yet: the manager's work
        for send in (completion, chat, completion):  # as often as we like: the window stays open
            resp = send(stack, ep["id"])
            assert resp.status_code == 409, resp.text
            error = resp.json()["error"]
            assert error["code"] == "endpoint_stopped"
            assert error["message"] == f"endpoint {ep['id']} was stopped before this request reached it"

    done = stack.wait_until("TERMINATED", lambda: phase_is(stack, ep["id"], "TERMINATED"), timeout_s=60)
    assert done["detail"] == "stopped by the user" and done["address"] is None
    assert done["lastRequestAt"] == last_request  # refused requests are not recorded
    resp = completion(stack, ep["id"])
    assert resp.status_code == 409 and resp.json()["error"]["message"] == (
        f"endpoint {ep['id']} is TERMINATED (stopped by the user) and answers no more requests; "
        "`training endpoints create` starts a new one")


def starting(endpoint_id: str) -> dict:
    return {"code": "conflict", "message": f"endpoint {endpoint_id} is STARTING; it answers requests once READY",
            "details": {"phase": "STARTING"}}


def kill_serving_process(pid: int) -> None:
    """SIGKILL to the serving process (its own session: pid is the process group), and wait until
    it is gone (or a zombie: its sockets are closed either way)."""
    os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{pid}") and "Z" not in _state(pid) and time.monotonic() < deadline:
        time.sleep(0.01)


def test_request_to_an_endpoint_whose_process_just_died_is_refused_with_its_phase(stack):
    ep = ready_endpoint(stack)
    assert completion(stack, ep["id"]).status_code == 200  # the API's pooled connection to it is open
    pid = ep["process"]["pid"]

    with manager_paused(stack):
        kill_serving_process(pid)
        assert stack.get(f"/v1/endpoints/{ep['id']}").json()["phase"] == "READY"  # the manager has not seen it
        for send in (completion, chat, completion):
            resp = send(stack, ep["id"])
            assert resp.status_code == 409, resp.text
            assert resp.json()["error"] == starting(ep["id"])
        lost = stack.get(f"/v1/endpoints/{ep['id']}").json()  # marked by the first request, not the manager
        assert lost["phase"] == "STARTING" and lost["address"] is None and lost["startingSince"] > ep["startingSince"]

    # The manager resumes: the process it recorded is gone, so it starts another (not FAILED).
    # Meanwhile every request is refused with the phase: never a 502, a 500 or a hang.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        started = time.monotonic()
        resp = completion(stack, ep["id"])
        assert time.monotonic() - started < REQUEST_TIMEOUT_S
        if resp.status_code == 200:
            break
        assert resp.status_code == 409 and resp.json()["error"] == starting(ep["id"]), resp.text
        time.sleep(0.1)
    else:
        raise AssertionError(f"not READY again\n{stack.log_tail('endpoint-manager')}")
    again = stack.get(f"/v1/endpoints/{ep['id']}").json()
    assert again["phase"] == "READY" and again["process"]["pid"] != pid
    events = [e["message"] for e in stack.get(f"/v1/endpoints/{ep['id']}/events").json()["items"]]
    assert ("a request found its serving process gone (connection refused or reset); STARTING until the "
            "endpoint manager sees it answer or starts another") in events
    assert events.index("serving process lost; starting it again") > events.index(
        "a request found its serving process gone (connection refused or reset); STARTING until the "
        "endpoint manager sees it answer or starts another")
    requests.delete(f"{stack.api_url}/v1/endpoints/{ep['id']}", headers=stack.headers(), timeout=REQUEST_TIMEOUT_S)


def test_a_serving_process_killed_between_requests_never_gives_a_502(stack):
    """Nothing paused: the manager races the request (it probes every 0.5 s); whichever sees the
    loss first, the request right after the kill gets the phase sentence."""
    ep = ready_endpoint(stack)
    recovered_s, answers = [], collections.Counter()
    for _ in range(2):
        assert completion(stack, ep["id"]).status_code == 200
        pid = stack.get(f"/v1/endpoints/{ep['id']}").json()["process"]["pid"]
        kill_serving_process(pid)
        killed = time.monotonic()
        resp = completion(stack, ep["id"])  # right after: the connection is refused (or already STARTING)
        answers[resp.status_code] += 1
        assert resp.status_code == 409 and resp.json()["error"] == starting(ep["id"]), resp.text
        while True:
            assert time.monotonic() - killed < 120, stack.log_tail("endpoint-manager")
            resp = completion(stack, ep["id"])
            answers[resp.status_code] += 1
            if resp.status_code == 200:
                recovered_s.append(round(time.monotonic() - killed, 1))
                break
            assert resp.status_code == 409 and resp.json()["error"] == starting(ep["id"]), resp.text
            time.sleep(0.1)
        assert stack.get(f"/v1/endpoints/{ep['id']}").json()["process"]["pid"] != pid
    print(f"\nserving process SIGKILLed twice: answers after the kills {dict(answers)}; "
          f"answering again after {recovered_s} s")
    requests.delete(f"{stack.api_url}/v1/endpoints/{ep['id']}", headers=stack.headers(), timeout=REQUEST_TIMEOUT_S)


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"
