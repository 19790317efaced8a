"""The Redis transport of the Celery app (`broker_transport` in shared/messaging/celery_app.py): kombu's own,
with one repair, so that a worker outlives a Redis restart while it runs a task.

What goes wrong without it (Celery 5.7, kombu 5.7; docs/faults.md, "Redis restarts under a running
task"): when the broker connection drops, the consumer first `collect()`s the broken connection,
which detaches its transport (`transport.client = None`), and then closes it. Closing the channel
restores the messages it delivered and has not acknowledged yet; with `acks_late` that is the
running task's message. Restoring needs a Redis client, whose parameters the channel reads from
`transport.client`, now None: `AttributeError: 'NoneType' object has no attribute 'hostname'`.
That is no connection error, so Celery calls it unrecoverable and the worker process exits. (A
worker with no task in hand has nothing to restore and survives, which is why only busy workers
died.) The task's own late acknowledgement, sent on the old channel once the task ends, fails the
same way.

The channel here remembers the connection it was made for and reads the parameters from it once its
transport has let go of it. Nothing else changes: the restore and the late ack then simply use a
new Redis connection (or fail with a connection error while Redis is still down, which Celery
handles).
"""

from __future__ import annotations

from kombu.transport import redis as kombu_redis


class Channel(kombu_redis.Channel):
    def __init__(self, connection, *args, **kwargs):
        self._made_for = connection.client  # the kombu Connection: host, port, password, options
        super().__init__(connection, *args, **kwargs)

    def _connparams(self, asynchronous=False):
        transport = self.connection
        if transport.client is not None or self._made_for is None:
            return super()._connparams(asynchronous=asynchronous)
        # Detached by Connection.collect(): read the parameters it was made with, then let go again
        # (the main process's event loop is the only caller, so nothing sees it in between).
        transport.client = self._made_for
        try:
            return super()._connparams(asynchronous=asynchronous)
        finally:
            transport.client = None


class Transport(kombu_redis.Transport):
    Channel = Channel
