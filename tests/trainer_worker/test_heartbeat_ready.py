"""A worker says it takes tasks (issue 27, item 3): its heartbeat keeps `node:NAME:ready` once
`mark_ready` is called (the worker calls it on Celery's worker_ready), with the heartbeat's TTL,
and drops it with the heartbeat; a worker that shares the heartbeat never writes it. The grant
rules then prefer a ready node over one still starting (tests/shared/claims/test_node_services.py)."""
# ruff: noqa: F811  (the claim fixtures are imported by name, then asked for as arguments)

from __future__ import annotations

from services.trainer_worker.heartbeat import HEARTBEAT_TTL_S, NodeHeartbeat, Taken
from tests.claim_fixtures import keys, prefix, redis_client  # noqa: F401  (fixtures)


def test_ready_is_said_with_the_heartbeat_once_the_worker_takes_tasks(redis_client, keys):
    beat = NodeHeartbeat(redis_client, keys, "local")
    assert beat.take(wait_s=0) == Taken.FREE
    beat.beat()
    assert redis_client.exists(keys.node_alive("local")) and not redis_client.exists(keys.node_ready("local"))
    beat.mark_ready()
    assert redis_client.get(keys.node_ready("local")) == beat.value
    assert 0 < redis_client.ttl(keys.node_ready("local")) <= HEARTBEAT_TTL_S  # it expires with a dead worker
    beat.stop()
    assert not redis_client.exists(keys.node_alive("local")) and not redis_client.exists(keys.node_ready("local"))


def test_a_worker_sharing_the_heartbeat_never_says_the_node_is_ready(redis_client, keys):
    redis_client.set(keys.node_alive("local"), "another live worker", ex=HEARTBEAT_TTL_S)
    beat = NodeHeartbeat(redis_client, keys, "local")
    beat.taken = Taken.SHARED
    beat.mark_ready()
    assert not redis_client.exists(keys.node_ready("local"))
