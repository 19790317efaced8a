"""The scheduler's entry point: `python -m services.scheduler.main`.

It loops: one pass (sweep, lost workers, lost endpoint managers, grant, dispatch), then waits up to a second for a
wake-up token that `submit` and `release` push. SIGTERM or SIGINT ends the loop after the pass in
progress; the process then exits 0. Several schedulers may run at once: every grant is one
optimistic Redis transaction, so they never grant a device twice.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import redis

from services.scheduler.dispatch import dispatch_granted, sweep
from services.scheduler.lost import requeue_lost
from services.scheduler.lost_endpoints import recover_lost_endpoints
from shared.claims.queue import ClaimQueue
from shared.config.deployment import DeploymentConfig, load_config
from shared.errors import TrainerError
from shared.messaging.celery_app import make_celery
from shared.process import logs
from shared.process.private_files import use_private_umask
from shared.store.documents import Store, connect
from shared.store.keys import Keys

WAKEUP_WAIT_S = 1  # the longest a submitted claim waits for a pass
ERROR_BACKOFF_S = 1.0


def run_once(
    *, config: DeploymentConfig, queue: ClaimQueue, store: Store, celery_app: Any, log: Any
) -> dict[str, int]:
    """One full pass over every pool. Returns how many claims each step touched."""
    released = sweep(queue=queue, store=store, config=config, log=log)
    lost = requeue_lost(queue=queue, store=store, config=config, log=log)
    recover_lost_endpoints(queue=queue, store=store, config=config, log=log)  # logs what it moves
    granted = []
    for pool in config.pools:
        for claim in queue.grant_pass(config, pool):
            log.bind(claim=claim["id"], **{claim["kind"]: claim["resource"]}).info(
                "granted", pool=pool, node=claim["node"], devices=claim["devices"]
            )
            granted.append(claim)
    dispatched = dispatch_granted(queue=queue, store=store, celery_app=celery_app, config=config, log=log)
    return {
        "released": len(released), "lost": len(lost), "granted": len(granted), "dispatched": len(dispatched),
    }


def serve(
    *, config: DeploymentConfig, client: redis.Redis, celery_app: Any, log: Any, stop: threading.Event
) -> None:
    keys = Keys(config.key_prefix)
    queue = ClaimQueue(client, keys, config=config)
    store = Store(client, keys)
    while not stop.is_set():
        try:
            counts = run_once(config=config, queue=queue, store=store, celery_app=celery_app, log=log)
            if any(counts.values()):
                log.info("pass", **counts)
            if not stop.is_set():
                client.blpop([keys.scheduler_wakeup()], timeout=WAKEUP_WAIT_S)
        except (redis.ConnectionError, redis.TimeoutError) as exc:  # past the client's retries (shared/store/documents.py)
            log.warning("redis unreachable", error=str(exc))
            stop.wait(ERROR_BACKOFF_S)
        except Exception:  # a bad claim or document must not stop scheduling for everyone
            log.exception("pass failed")
            stop.wait(ERROR_BACKOFF_S)


def main() -> int:
    use_private_umask()  # whatever it writes is this user's only (shared/process/private_files.py)
    log = logs.configure("scheduler")
    try:
        config = load_config()
    except TrainerError as exc:
        log.error("cannot start", error=exc.message)
        return 2
    stop = logs.stop_on_signals(log)
    client = connect(config.redis_url)
    log.info("scheduler started", pools=sorted(config.pools), keyPrefix=config.key_prefix)
    serve(config=config, client=client, celery_app=make_celery(config), log=log, stop=stop)
    log.info("scheduler stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
