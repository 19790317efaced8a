"""What the scheduler does for endpoint claims (services/scheduler/dispatch.py), on a real Redis:
a grant moves the endpoint QUEUED -> STARTING and sends no Celery task (the node's endpoint manager
picks it up); the sweep gives back the devices of an endpoint that has ended."""

from __future__ import annotations

import json

import pytest
import structlog

from services.scheduler.dispatch import needs_no_devices
from services.scheduler.main import run_once
from shared.claims.queue import ClaimQueue
from shared.ids import Kind, new_id
from shared.states import EndpointPhase
from shared.store import Store, connect
from tests.conftest import mark_nodes_alive


class RecordingSender:
    """Stands in for Celery's `send_task`: records calls instead of publishing them."""

    def __init__(self):
        self.sent = []

    def send_task(self, name, args=None, queue=None, **_options):
        self.sent.append((name, list(args or []), queue))


@pytest.fixture
def env(config, keys):
    client = connect(config.redis_url)
    mark_nodes_alive(client, keys, config)
    store, queue, sender = Store(client, keys), ClaimQueue(client, keys, config=config), RecordingSender()

    def scheduler_pass():
        return run_once(config=config, queue=queue, store=store, celery_app=sender, log=structlog.get_logger())

    return store, queue, sender, scheduler_pass


def queued_endpoint(store, queue, gpus: int = 1) -> tuple[str, dict]:
    """A QUEUED endpoint and its claim, as the API's create_endpoint writes them."""
    endpoint_id = new_id(Kind.ENDPOINT)
    store.create({"id": endpoint_id, "kind": "endpoint", "workload": "endpoints", "model": "builtin/tiny-qwen3",
                  "gpus": gpus, "pool": "default", "phase": "QUEUED", "startingSince": None, "stopRequested": False,
                  "scheduling": {"claim": None, "pool": "default", "node": None, "devices": []}})
    claim = queue.submit(kind="endpoint", resource_id=endpoint_id, pool="default", gpus=gpus, workload="endpoints",
                         model="builtin/tiny-qwen3")
    store.update(endpoint_id, lambda d: {**d, "scheduling": {**d["scheduling"], "claim": claim["id"]}})
    return endpoint_id, claim


def test_a_granted_endpoint_starts_without_a_celery_task(env):
    store, queue, sender, scheduler_pass = env
    endpoint_id, claim = queued_endpoint(store, queue, gpus=2)
    counts = scheduler_pass()
    assert (counts["granted"], counts["dispatched"]) == (1, 1)
    doc = store.get(endpoint_id)
    assert doc["phase"] == "STARTING" and doc["startingSince"]
    assert doc["scheduling"] == {"claim": claim["id"], "pool": "default", "node": "local",
                                 "devices": ["cpu:0", "cpu:1"]}
    assert sender.sent == []
    assert queue.get(claim["id"])["dispatchedAt"]
    assert [e["message"] for e in store.events(endpoint_id)] == ["granted 2 CPU slot(s) on node local (cpu:0, cpu:1)"]

    scheduler_pass()  # nothing more: dispatched once, no second event, still holding its devices
    assert len(store.events(endpoint_id)) == 1 and queue.get(claim["id"])["state"] == "GRANTED"


def test_a_claim_redispatched_after_a_scheduler_stop_changes_nothing(env):
    store, queue, sender, scheduler_pass = env
    endpoint_id, claim = queued_endpoint(store, queue)
    scheduler_pass()
    before = store.get(endpoint_id)
    raw = queue.get(claim["id"])
    store.redis.set(store.keys.claim(claim["id"]), json.dumps({**raw, "dispatchedAt": None}))
    store.redis.delete(store.keys.dispatching(claim["id"]))
    scheduler_pass()
    assert store.get(endpoint_id)["startingSince"] == before["startingSince"]
    assert len(store.events(endpoint_id)) == 1 and sender.sent == []


@pytest.mark.parametrize("phase", ["TERMINATED", "FAILED"])
def test_the_sweep_releases_the_claim_of_an_ended_endpoint(env, phase):
    store, queue, _, scheduler_pass = env
    endpoint_id, claim = queued_endpoint(store, queue)
    scheduler_pass()
    store.update(endpoint_id, lambda d: {**d, "phase": phase})
    assert scheduler_pass()["released"] == 1
    assert queue.get(claim["id"])["state"] == "RELEASED"


@pytest.mark.parametrize("phase", list(EndpointPhase))
def test_only_ended_endpoints_need_no_devices(phase):
    assert needs_no_devices("endpoint", {"phase": phase.value}) is phase.is_terminal
    assert needs_no_devices("endpoint", None)


def test_an_endpoint_stopped_while_queued_is_not_started(env):
    """The API ends a QUEUED endpoint itself (TERMINATED) and releases its claim; if the grant came
    first, dispatch finds it no longer QUEUED and gives the devices back."""
    store, queue, _, scheduler_pass = env
    endpoint_id, claim = queued_endpoint(store, queue)
    queue.grant_pass(queue.config, "default")
    store.update(endpoint_id, lambda d: {**d, "phase": "TERMINATED"})
    scheduler_pass()
    assert store.get(endpoint_id)["phase"] == "TERMINATED"
    assert queue.get(claim["id"])["state"] == "RELEASED" and store.events(endpoint_id) == []
