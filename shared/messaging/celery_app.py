"""The Celery application every service uses: Redis is the broker and the result store.

Work is dispatched only by the scheduler, after a grant, to the queue of the node that holds the
granted devices (`node_queue`). Workers take one task at a time per child (prefetch 1) and
acknowledge late, so a task whose worker dies is delivered again; the worker's lease makes sure a
redelivered task never trains a run in a second place.

Redis may restart under a running task (docs/faults.md, "Worker and training"): the worker keeps
the task running, reconnects for ever (`broker_connection_max_retries=None`), and its transport
(shared/messaging/celery_redis.py) outlives the reconnect. Sockets carry TCP keepalive, so a Redis that went
away without closing them (a container gone) is noticed within seconds instead of hours.
"""

from __future__ import annotations

from celery import Celery

from shared.config.deployment import DeploymentConfig

EXECUTE_TASK = "trainer.execute"
# Long training tasks must not be redelivered while their worker still runs them: Redis redelivers
# unacknowledged tasks after this many seconds. The lease still guards against a duplicate.
VISIBILITY_TIMEOUT_S = 12 * 3600
# kombu's Redis transport with the repair that lets a busy worker outlive a Redis restart.
TRANSPORT = "shared.messaging.celery_redis:Transport"
# How long Celery waits for the result of a pool process that died before it re-queues its task.
WORKER_LOST_WAIT_S = 1.0
# A send_task (the scheduler's dispatch) retried over a Redis blip: about 15 s in all. A dispatch
# that still fails is done again by the next pass (the claim has no `dispatchedAt`).
PUBLISH_RETRY_POLICY = {"max_retries": 10, "interval_start": 0, "interval_step": 0.5, "interval_max": 2}


def node_queue(node: str) -> str:
    return f"node.{node}"


def make_celery(config: DeploymentConfig) -> Celery:
    from shared.store.keys import Keys
    from shared.store.redis_retry import SOCKET_CONNECT_TIMEOUT_S, SOCKET_TIMEOUT_S, keepalive_options

    app = Celery("trainer", broker=config.redis_url, backend=None)  # no result backend: nothing to retry there
    app.conf.update(
        broker_transport=TRANSPORT,
        broker_transport_options={
            "global_keyprefix": Keys(config.key_prefix).celery_prefix(),
            "visibility_timeout": VISIBILITY_TIMEOUT_S,
            "socket_keepalive": True,
            "socket_keepalive_options": keepalive_options(),
            "socket_connect_timeout": SOCKET_CONNECT_TIMEOUT_S,
            # above the 1 s BRPOP the consumer polls with
            "socket_timeout": SOCKET_TIMEOUT_S,
            "retry_on_timeout": True,
            "health_check_interval": 10,
        },
        broker_connection_retry=True,
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,  # a worker waits for its Redis for as long as it takes
        broker_channel_error_retry=True,
        # A training task keeps running while the broker is away: its lease and fence (not the
        # broker) keep it in one place, and its reporter retries its writes (services/trainer_worker).
        worker_cancel_long_running_tasks_on_connection_loss=False,
        task_publish_retry=True,
        task_publish_retry_policy=PUBLISH_RETRY_POLICY,
        task_acks_late=True,
        # A task whose pool process died (the out-of-memory killer) is put back on the queue, and the
        # copy gives its work back at once (services/trainer_worker/takeover.py). Celery first waits
        # `worker_lost_wait` for a result the process may have sent as it died: ours is a short
        # string read at once, so a second is plenty (Celery waits 10 s by default).
        task_reject_on_worker_lost=True,
        worker_lost_wait=WORKER_LOST_WAIT_S,
        worker_prefetch_multiplier=1,
        task_default_queue="trainer.default",
        task_ignore_result=True,
        worker_hijack_root_logger=False,
        worker_send_task_events=True,
        task_send_sent_event=True,
    )
    return app
