"""The Celery application every service uses: Redis is the broker and the result store.

Work is dispatched only by the scheduler, after a grant, to the queue of the node that holds the
granted devices (`node_queue`). Workers take one task at a time per child (prefetch 1) and
acknowledge late, so a task whose worker dies is delivered again; the worker's lease makes sure a
redelivered task never trains a run in a second place.
"""

from __future__ import annotations

from celery import Celery

from shared.config import DeploymentConfig

EXECUTE_TASK = "trainer.execute"
# Long training tasks must not be redelivered while their worker still runs them: Redis redelivers
# unacknowledged tasks after this many seconds. The lease still guards against a duplicate.
VISIBILITY_TIMEOUT_S = 12 * 3600


def node_queue(node: str) -> str:
    return f"node.{node}"


def make_celery(config: DeploymentConfig) -> Celery:
    from shared.keys import Keys

    app = Celery("trainer", broker=config.redis_url, backend=None)
    app.conf.update(
        broker_transport_options={
            "global_keyprefix": Keys(config.key_prefix).celery_prefix(),
            "visibility_timeout": VISIBILITY_TIMEOUT_S,
        },
        broker_connection_retry_on_startup=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_default_queue="trainer.default",
        task_ignore_result=True,
        worker_hijack_root_logger=False,
        worker_send_task_events=True,
        task_send_sent_event=True,
    )
    return app
