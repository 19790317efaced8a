"""Entry point: `python -m services.trainer_worker.worker --node NODE` runs the Celery worker of one
node, listening on that node's queue, one child per device, prefetch 1, a fresh child per task.

Before it takes a task it becomes the node's heartbeat (heartbeat.py), as the node's only worker
gives back the work its node's previous worker left behind (reclaim.py), and imports the training
stack once (warm.py), so that the child forked for each task starts with it. Asked to stop
(SIGTERM, SIGINT), it passes the stop on to its children, which give their work back (stopping.py)."""

from __future__ import annotations

import argparse
import os
import sys
import warnings

from shared.config.deployment import load_config
from shared.messaging.celery_app import make_celery, node_queue
from shared.process import logs
from shared.process.private_files import use_private_umask


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="the trainer's worker for one node")
    parser.add_argument("--node", default=os.environ.get("TRAINING_NODE"), required="TRAINING_NODE" not in os.environ)
    parser.add_argument("--loglevel", default="INFO")
    args = parser.parse_args(argv)
    use_private_umask()  # snapshots, events, job files of its task children: this user's only
    config = load_config()
    node = config.node(args.node)
    if node is None:
        sys.exit(f"error: node {args.node} is not declared in the deployment config")
    from services.trainer_worker.trackers import missing_packages

    missing = missing_packages(config.trackers)
    if missing:
        sys.exit("error: " + "\n".join(missing))
    logs.configure("trainer_worker")
    from services.trainer_worker.tasks import register

    app = make_celery(config)
    register(app, config, node.name)
    heartbeat = start_node(config, node.name)
    try:
        # After the heartbeat and the reclaim (a restarted worker gives its runs back at once),
        # before the pool forks: every task's child starts with the training stack imported.
        from services.trainer_worker.warm import preload

        logs.get("trainer_worker").info("training stack imported", node=node.name, seconds=round(preload(), 2))
        _run_worker(app, node, args.loglevel, heartbeat, grace_s=config.worker_stop_grace_s)
    finally:
        heartbeat.stop()


def start_node(config, node: str):
    """Take the node's heartbeat, then reclaim its orphans if this is the node's only worker."""
    import time

    from services.trainer_worker.heartbeat import NodeHeartbeat
    from services.trainer_worker.reclaim import reclaim_orphans
    from shared.claims.queue import ClaimQueue
    from shared.store.documents import Store
    from shared.store.keys import Keys
    from shared.store.redis_retry import connect_retrying

    log = logs.get("trainer_worker").bind(node=node)
    began = time.monotonic()
    client, keys = connect_retrying(config.redis_url, config.redis_retry_s), Keys(config.key_prefix)
    heartbeat = NodeHeartbeat(client, keys, node).start()  # takes it, then beats it
    if not heartbeat.alone:
        log.warning("another worker keeps this node's heartbeat alive; this one reclaims nothing "
                    "(is one node configured for two workers?)")
        return heartbeat
    given = reclaim_orphans(queue=ClaimQueue(client, keys), store=Store(client, keys), config=config, node=node,
                            log=log)
    log.info("node taken", how=str(heartbeat.taken), previous=heartbeat.previous and heartbeat.previous.pid,
             reclaimed=[c["resource"] for c in given], seconds=round(time.monotonic() - began, 3))
    return heartbeat


def _quiet_a_chosen_warning(**_) -> None:
    """We keep tasks running over a lost broker connection on purpose (shared/messaging/celery_app.py); Celery
    warns about that choice on every reconnect. Added once Celery has set up its logging, which
    turns its own warnings back on."""
    warnings.filterwarnings("ignore", message=r"(?s).*worker_cancel_long_running_tasks_on_connection_loss")


def _run_worker(app, node, loglevel: str, heartbeat=None, grace_s: float | None = None) -> None:
    from celery import signals

    from services.trainer_worker import stopping

    signals.celeryd_after_setup.connect(_quiet_a_chosen_warning, weak=False)
    # A stop (SIGTERM) reaches the pool processes even when only this process was signalled (a
    # container's main process), and the node stops being granted work (stopping.py).
    signals.worker_shutting_down.connect(
        lambda **_: stopping.on_worker_shutting_down(heartbeat, logs.get("trainer_worker").bind(node=node.name),
                                                    grace_s=grace_s),
        weak=False)
    if heartbeat is not None:  # Celery consumes now: the scheduler may prefer this node (heartbeat.mark_ready)
        signals.worker_ready.connect(lambda **_: heartbeat.mark_ready(), weak=False)
    app.worker_main([
        "worker",
        "--queues", node_queue(node.name),
        "--concurrency", str(node.device_count),
        "--prefetch-multiplier", "1",
        "--max-tasks-per-child", "1",
        "--hostname", f"{node.name}@%h",
        "--loglevel", loglevel,
        "--without-gossip", "--without-mingle", "--task-events",
    ])


if __name__ == "__main__":
    main()
