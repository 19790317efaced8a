"""Entry point: `python -m services.endpoint_manager.main --node NODE`, one per node (like the
trainer worker). It loops: one pass over the node's endpoints (manager.py), then a short wait.

SIGTERM or SIGINT ends the loop after the pass in progress and lets go of the node. Serving
processes keep running, and the next manager for the node adopts them, unless
`--stop-serving-on-exit` (the local stack uses it, so `training down` leaves nothing behind).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from typing import Any

import redis

from services.endpoint_manager.manager import MANAGER_LEASE_MS, EndpointManager
from shared.config.deployment import load_config
from shared.errors import TrainerError
from shared.process import logs
from shared.process.private_files import use_private_umask
from shared.store.documents import connect

PASS_EVERY_S = 0.5
ERROR_BACKOFF_S = 1.0


def serve(*, manager: EndpointManager, stop: threading.Event, log: Any, every_s: float = PASS_EVERY_S) -> None:
    standby = False
    while not stop.is_set():
        try:
            counts = manager.run_once()
            if bool(counts.get("standby")) != standby:
                standby = not standby
                log.info("standby: another manager acts for this node" if standby else "acting for the node")
            stop.wait(every_s)
        except (redis.ConnectionError, redis.TimeoutError) as exc:  # past the client's retries (shared/store/documents.py)
            log.warning("redis unreachable", error=str(exc))
            stop.wait(ERROR_BACKOFF_S)
        except Exception:  # a bad document must not stop the node's endpoints
            log.exception("pass failed")
            stop.wait(ERROR_BACKOFF_S)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the trainer's endpoint manager for one node")
    parser.add_argument("--node", default=os.environ.get("TRAINING_NODE"), required="TRAINING_NODE" not in os.environ)
    parser.add_argument("--bind-host", default=os.environ.get("TRAINING_ENDPOINT_BIND_HOST"),
                        help="interface serving processes listen on (env TRAINING_ENDPOINT_BIND_HOST; default: the "
                             "node's host in the deployment config, else 127.0.0.1)")
    parser.add_argument("--advertise-host", default=os.environ.get("TRAINING_ENDPOINT_HOST"),
                        help="host in the address of this node's endpoints, as the API and other nodes reach them "
                             "(env TRAINING_ENDPOINT_HOST; default: the node's host in the deployment config, else "
                             "the bind host)")
    parser.add_argument("--every", type=float, default=PASS_EVERY_S, help="seconds between passes")
    parser.add_argument("--lease-s", type=float,
                        default=os.environ.get("TRAINING_ENDPOINT_MANAGER_LEASE_S", str(MANAGER_LEASE_MS / 1000)),
                        help="seconds the node lease outlives its last renewal: how soon a standby manager takes "
                             "over, and when the scheduler starts counting the node as without a manager "
                             f"(env TRAINING_ENDPOINT_MANAGER_LEASE_S; {MANAGER_LEASE_MS // 1000})")
    parser.add_argument("--stop-serving-on-exit", action="store_true",
                        help="stop this node's serving processes when the manager exits")
    args = parser.parse_args(argv)
    use_private_umask()  # load specs, serving logs: this user's only (shared/process/private_files.py)
    log = logs.configure("endpoint_manager").bind(node=args.node)
    try:
        config = load_config()
        manager = EndpointManager(config=config, client=connect(config.redis_url), node=args.node, log=log,
                                  bind_host=args.bind_host, advertise_host=args.advertise_host,
                                  lease_ms=max(1000, int(args.lease_s * 1000)))
    except (TrainerError, ValueError) as exc:
        log.error("cannot start", error=getattr(exc, "message", None) or str(exc))
        return 2
    stop = logs.stop_on_signals(log)
    log.info("endpoint manager started", pool=manager.pool.name, keyPrefix=config.key_prefix)
    try:
        serve(manager=manager, stop=stop, log=log, every_s=args.every)
    finally:
        manager.close(stop_processes=args.stop_serving_on_exit)
    log.info("endpoint manager stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
