"""Fixtures of the tests of claims (tests/shared/claims) and of the scheduler (tests/scheduler): a
real Redis (DB 12) under a key prefix of the test's own, whose keys are deleted afterwards, and a
deployment config with two pools. Each of those folders' conftest.py imports them."""

from __future__ import annotations

import secrets

import pytest

from shared.claims.queue import ClaimQueue
from shared.config.deployment import DeploymentConfig, parse_config
from shared.lifecycle.states import RunStatus
from shared.store.documents import Store, connect
from shared.store.ids import Kind, new_id
from shared.store.keys import Keys

REDIS_URL = "redis://127.0.0.1:6379/12"

CONFIG = {
    "keyPrefix": "unused:",
    "defaultPool": "default",
    "pools": {
        "default": {"nodes": [{"name": "local", "devices": {"kind": "cpu", "count": 2}}]},
        "gpu": {
            "nodes": [
                {"name": "big", "devices": {"kind": "cuda", "count": 4}},
                {"name": "small", "devices": {"kind": "cuda", "count": 2}},
            ],
            "quotas": {"endpoints": 2},
        },
    },
}


@pytest.fixture
def redis_url() -> str:
    return REDIS_URL


@pytest.fixture
def prefix() -> str:
    return f"test-{secrets.token_hex(4)}:"


@pytest.fixture
def redis_client(prefix):
    client = connect(REDIS_URL)
    yield client
    keys = list(client.scan_iter(match=f"{prefix}*", count=500))
    if keys:
        client.delete(*keys)
    client.close()


@pytest.fixture
def keys(prefix) -> Keys:
    return Keys(prefix)


@pytest.fixture
def config(prefix) -> DeploymentConfig:
    return parse_config(CONFIG, env={"TRAINING_KEY_PREFIX": prefix, "TRAINING_REDIS_URL": REDIS_URL})


@pytest.fixture
def queue(redis_client, keys, config) -> ClaimQueue:
    return ClaimQueue(redis_client, keys, config=config)


@pytest.fixture
def store(redis_client, keys) -> Store:
    return Store(redis_client, keys)


@pytest.fixture
def make_run(store):
    """Store a QUEUED run document (only the fields the scheduler reads) and return its id."""

    def make(*, gpus: int = 1, pool: str = "default", workload: str = "runs") -> str:
        run_id = new_id(Kind.RUN)
        store.create({"id": run_id, "status": RunStatus.QUEUED.value, "workload": workload,
                      "pool": pool, "gpus": gpus, "scheduling": None})
        return run_id

    return make


class RecordingSender:
    """Stands in for Celery's `send_task` only: it records each call instead of publishing a
    message to the broker, and never fails. The real Celery path (scheduler -> broker -> worker)
    is tested end to end elsewhere."""

    def __init__(self):
        self.sent: list[tuple[str, list, str]] = []

    def send_task(self, name, args=None, queue=None, **_options):
        self.sent.append((name, list(args or []), queue))


@pytest.fixture
def sender() -> RecordingSender:
    return RecordingSender()


@pytest.fixture(autouse=True)
def nodes_alive(redis_client, keys, config):
    """The scheduler grants only on nodes whose worker is alive; these tests run no worker."""
    from tests.conftest import mark_nodes_alive

    mark_nodes_alive(redis_client, keys, config)
