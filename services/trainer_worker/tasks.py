"""Celery tasks: thin, they only call into leased_work.py."""

from __future__ import annotations

import os

from billiard.process import current_process
from celery import Celery

from shared.messaging.celery_app import EXECUTE_TASK

_worker = None


def register(app: Celery, config, node: str) -> None:
    @app.task(name=EXECUTE_TASK, bind=True, acks_late=True)
    def execute_task(self, kind: str, resource_id: str, claim_id: str) -> str:
        global _worker
        from services.trainer_worker import stopping
        from services.trainer_worker.leased_work import execute
        from services.trainer_worker.node_worker import Worker
        from shared.process import logs

        # SIGTERM from now on gives this task's work back (the process runs this one task only); in
        # a pool process only, never in Celery's main process, whose own SIGTERM starts its shutdown.
        if current_process().name != "MainProcess":
            stopping.install_in_child(grace_s=config.worker_stop_grace_s, log=logs.get("trainer_worker"))
        if _worker is None or _worker.node != node or os.getpid() != getattr(_worker, "pid", None):
            _worker = Worker(config, node)
            _worker.pid = os.getpid()
        return execute(_worker, kind, resource_id, claim_id)
