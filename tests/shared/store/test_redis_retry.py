"""Redis clients that ride out a blip (shared/store/redis_retry.py), the knob that bounds them
(`worker.redisRetryS`), and the repaired Celery transport (shared/messaging/celery_redis.py)."""

from __future__ import annotations

import time

import pytest
import redis

from shared.config.deployment import parse_config
from shared.errors import ValidationFailed
from shared.messaging.celery_app import TRANSPORT, make_celery
from shared.process.ports import free_port
from shared.store.redis_retry import RetryFor, connect_retrying, unreachable

CONFIG = {"pools": {"default": {"nodes": [{"name": "local", "devices": {"kind": "cpu", "count": 1}}]}}}


def test_a_client_retries_for_its_budget_then_raises():
    client = connect_retrying(f"redis://127.0.0.1:{free_port()}/0", retry_s=0.6)
    began = time.monotonic()
    with pytest.raises(redis.ConnectionError) as raised:
        client.get("x")
    assert 0.55 < time.monotonic() - began < 3
    assert unreachable(raised.value)


def test_unreachable_looks_through_what_an_error_was_raised_from():
    try:
        try:
            raise redis.TimeoutError("no answer")
        except redis.TimeoutError as exc:
            raise RuntimeError("the callback failed") from exc
    except RuntimeError as wrapped:
        assert unreachable(wrapped)
    assert not unreachable(ValueError("a real failure"))
    assert not unreachable(redis.ResponseError("WRONGTYPE"))


def test_retry_pauses_double_up_to_their_cap():
    retry = RetryFor(10, first_s=0.1, max_s=1.0)
    assert [retry._backoff.compute(n) for n in (1, 2, 3, 4)] == [0.2, 0.4, 0.8, 1.0]


def test_the_budget_is_configured_in_the_file_or_the_environment():
    assert parse_config(CONFIG, env={}).redis_retry_s == 60
    assert parse_config({**CONFIG, "worker": {"redisRetryS": 30}}, env={}).redis_retry_s == 30
    assert parse_config(CONFIG, env={"TRAINING_REDIS_RETRY_S": "5"}).redis_retry_s == 5
    with pytest.raises(ValidationFailed) as refused:
        parse_config({**CONFIG, "worker": {"redisRetryS": 0}}, env={})
    assert refused.value.message == "deployment config: worker.redisRetryS must be a number of seconds above 0"


def test_the_celery_app_reconnects_for_ever_and_keeps_tasks_running():
    conf = make_celery(parse_config(CONFIG, env={})).conf
    assert conf.broker_transport == TRANSPORT == "shared.messaging.celery_redis:Transport"
    assert conf.broker_connection_retry and conf.broker_connection_retry_on_startup
    assert conf.broker_connection_max_retries is None
    assert conf.worker_cancel_long_running_tasks_on_connection_loss is False
    assert conf.broker_transport_options["socket_keepalive"] is True


def test_a_detached_channel_still_finds_its_redis(redis_url):
    """What Celery 5.7's reconnect does to a channel (collect() detaches its transport, then close()
    restores the unacknowledged task) no longer raises AttributeError ... 'hostname'."""
    from kombu import Connection

    for transport, survives in ((TRANSPORT, True), ("redis", False)):
        connection = Connection(redis_url, transport=transport)
        channel = connection.channel()
        channel.connection.client = None  # what Connection.collect() leaves behind
        if survives:
            assert channel._connparams()["port"] == 6379
            assert channel.connection.client is None
        else:
            with pytest.raises(AttributeError, match="hostname"):
                channel._connparams()
