"""A worker starting on a node gives back its node's orphans at once (services/trainer_worker/reclaim.py,
heartbeat.py; issue 14): real Redis, real claims granted and dispatched by the scheduler's own code
(only Celery's send_task is recorded instead of sent, tests/claim_fixtures.py), leases as a worker
takes them, and real processes for "dead" and "alive"."""
# ruff: noqa: F811  (the claim fixtures are imported by name, then asked for as arguments)

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest
import structlog

from services.scheduler.dispatch import dispatch_granted
from services.trainer_worker.heartbeat import (
    NodeHeartbeat,
    Taken,
    dead_here,
    process_started,
)
from services.trainer_worker.lease import Lease
from services.trainer_worker.reclaim import reclaim_orphans
from shared.lifecycle.states import ClaimState, EvaluationStatus, RunStatus
from shared.messaging.celery_app import node_queue
from shared.store.ids import Kind, new_id
from tests.claim_fixtures import (  # noqa: F401  (fixtures)
    config,
    keys,
    make_run,
    nodes_alive,
    prefix,
    queue,
    redis_client,
    redis_url,
    sender,
    store,
)

LOG = structlog.get_logger()


def started(queue, store, config, sender, resource_id, kind="run"):
    """A claim granted on node local, dispatched, its work RUNNING: as a worker would have it."""
    claim = queue.submit(kind=kind, resource_id=resource_id, pool="default", gpus=1, workload=f"{kind}s")
    queue.grant_pass(config, "default")
    dispatch_granted(queue=queue, store=store, celery_app=sender, config=config)
    store.update(resource_id, lambda doc: {**doc, "status": "RUNNING", "cancelRequested": False, "fence": 1})
    return queue.get(claim["id"])


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def lease_token(pid: int, node: str = "local") -> str:
    return f"{node}/{socket.gethostname()}/{pid}:abcdef"


def reclaim(queue, store, config, **kw):
    return reclaim_orphans(queue=queue, store=store, config=config, node="local", log=LOG, **kw)


def test_a_run_whose_lease_is_gone_is_requeued_at_once_keeping_its_place(queue, store, config, sender, make_run):
    run_id = make_run()
    claim = started(queue, store, config, sender, run_id)
    behind = make_run()
    queue.submit(kind="run", resource_id=behind, pool="default", gpus=1, workload="runs")
    began = time.monotonic()
    assert [c["id"] for c in reclaim(queue, store, config)] == [claim["id"]]
    assert time.monotonic() - began < 1.0
    run = store.get(run_id)
    assert run["status"] == RunStatus.QUEUED and run["attempts"] == 1
    assert run["fence"] == 1  # a new fencing number: fence:RUN was never taken here, so INCR gives 1
    new = queue.current(run_id)
    assert run["scheduling"]["claim"] == new["id"] != claim["id"] and new["seq"] == claim["seq"]
    assert queue.get(claim["id"])["state"] == ClaimState.RELEASED
    assert [c["resource"] for c in queue.waiting("default")] == [run_id, behind]
    [event] = [e for e in store.events(run_id) if e["level"] == "warn"]
    assert event["message"] == "worker restarted on node local; re-queued keeping its place"
    assert reclaim(queue, store, config) == []


def test_a_lease_of_a_dead_process_of_this_machine_is_dropped_and_the_run_requeued(
        queue, store, config, sender, make_run, keys):
    run_id = make_run()
    claim = started(queue, store, config, sender, run_id)
    store.redis.incr(keys.fence(run_id))  # fence 1, as the dead worker took it
    store.redis.set(keys.lease(run_id), lease_token(dead_pid()), px=30_000)
    assert [c["id"] for c in reclaim(queue, store, config, silent_s=60)] == [claim["id"]]  # no waiting
    assert store.redis.get(keys.lease(run_id)) is None
    run = store.get(run_id)
    assert run["status"] == RunStatus.QUEUED and run["fence"] == 2
    # The dead holder's fence no longer matches: whatever it might still write is refused.
    from services.trainer_worker.lease import LeaseLost, fenced_update

    ghost = Lease(store.redis, keys, run_id, "ghost")
    ghost.fence = 1
    with pytest.raises(LeaseLost):
        fenced_update(store, ghost, "run", lambda doc: {**doc, "progress": {"step": 99}})


def test_a_lease_renewed_by_a_live_holder_is_left_to_it_and_a_silent_one_is_not(
        queue, store, config, sender, make_run, keys):
    live, silent = make_run(), make_run()
    live_claim = started(queue, store, config, sender, live)
    silent_claim = started(queue, store, config, sender, silent)
    # Holders that are not provably dead (another machine's): only silence tells.
    store.redis.set(keys.lease(live), "local/another-host/1:aa", px=30_000)
    store.redis.set(keys.lease(silent), "local/another-host/2:bb", px=30_000)
    stop = threading.Event()

    def renew():
        while not stop.wait(0.2):
            store.redis.pexpire(keys.lease(live), 30_000)

    thread = threading.Thread(target=renew, daemon=True)
    thread.start()
    try:
        began = time.monotonic()
        given = reclaim(queue, store, config, silent_s=1.5)
    finally:
        stop.set()
        thread.join()
    assert [c["id"] for c in given] == [silent_claim["id"]]
    assert 1.0 < time.monotonic() - began < 3.0
    assert store.get(live)["status"] == RunStatus.RUNNING and queue.get(live_claim["id"])["state"] == ClaimState.GRANTED
    assert store.redis.get(keys.lease(live)) == "local/another-host/1:aa"
    assert store.get(silent)["status"] == RunStatus.QUEUED


def test_work_whose_task_still_waits_in_the_node_queue_or_of_another_node_is_left_alone(
        queue, store, config, sender, make_run, keys):
    waiting_run = make_run()
    claim = started(queue, store, config, sender, waiting_run)
    # The message of its task, as kombu keeps it in the node's queue (task id = claim id).
    store.redis.lpush(keys.celery_prefix() + node_queue("local"), json.dumps({"headers": {"id": claim["id"]}}))
    other = make_run(pool="gpu")
    started_other = queue.submit(kind="run", resource_id=other, pool="gpu", gpus=1, workload="runs")
    queue.grant_pass(config, "gpu")
    dispatch_granted(queue=queue, store=store, celery_app=sender, config=config)
    assert queue.get(started_other["id"])["node"] != "local"
    assert reclaim(queue, store, config) == []
    assert store.get(waiting_run)["status"] == RunStatus.RUNNING
    assert store.get(other)["status"] == RunStatus.STARTING


def test_a_cancel_requested_run_is_cancelled_and_an_evaluation_requeued(queue, store, config, sender, make_run):
    run_id = make_run()
    started(queue, store, config, sender, run_id)
    store.update(run_id, lambda doc: {**doc, "cancelRequested": True})
    evaluation_id = new_id(Kind.EVALUATION)
    store.create({"id": evaluation_id, "kind": "evaluation", "status": "QUEUED", "workload": "evaluations",
                  "pool": "default", "gpus": 1, "scheduling": None, "cancelRequested": False})
    started(queue, store, config, sender, evaluation_id, kind="evaluation")
    assert len(reclaim(queue, store, config)) == 2
    run = store.get(run_id)
    assert run["status"] == RunStatus.CANCELLED
    assert run["detail"] == "cancelled by the user; its worker on node local restarted before it stopped"
    assert queue.current(run_id) is None
    evaluation = store.get(evaluation_id)
    assert evaluation["status"] == EvaluationStatus.QUEUED and evaluation["attempts"] == 1
    assert queue.current(evaluation_id)["state"] == ClaimState.WAITING


# --- the node heartbeat: how a worker knows it is the node's only one

def heartbeat_value(pid: int, *, host: str | None = None, started: str | None = None) -> str:
    return json.dumps({"node": "local", "host": host or socket.gethostname(), "pid": pid, "started": started,
                       "token": "old", "since": "then"})


def test_a_free_heartbeat_is_taken_and_a_dead_holder_of_this_machine_is_replaced_at_once(store, keys):
    store.redis.delete(keys.node_alive("local"))  # nodes_alive's stand-in, which no worker beats
    first = NodeHeartbeat(store.redis, keys, "local")
    assert first.take(wait_s=0) == Taken.FREE and first.alone
    store.redis.set(keys.node_alive("local"), heartbeat_value(dead_pid()), ex=10)
    second = NodeHeartbeat(store.redis, keys, "local")
    began = time.monotonic()
    assert second.take(wait_s=30) == Taken.TOOK_OVER and second.alone
    assert time.monotonic() - began < 1.0
    assert store.redis.get(keys.node_alive("local")) == second.value
    # A restart that got the same pid (a container's) replaces its previous self too.
    store.redis.set(keys.node_alive("local"), heartbeat_value(os.getpid()))
    assert NodeHeartbeat(store.redis, keys, "local").take(wait_s=0) == Taken.TOOK_OVER


def test_a_heartbeat_a_live_worker_keeps_up_is_shared_never_overwritten(store, keys):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        other = heartbeat_value(sleeper.pid, started=process_started(sleeper.pid))
        store.redis.set(keys.node_alive("local"), other, ex=10)
        beat = NodeHeartbeat(store.redis, keys, "local")
        assert beat.take(wait_s=0.5) == Taken.SHARED and not beat.alone
        assert beat.beat() is False and store.redis.get(keys.node_alive("local")) == other
        beat.stop()  # lets go of its own only
        assert store.redis.get(keys.node_alive("local")) == other
        # Another machine's holder that stops beating: taken once its key expires.
        store.redis.set(keys.node_alive("local"), heartbeat_value(1, host="elsewhere"), px=600)
        assert NodeHeartbeat(store.redis, keys, "local").take(wait_s=5) == Taken.FREE
    finally:
        sleeper.kill()
        sleeper.wait()


def test_dead_here_tells_a_reused_pid_from_the_process_that_had_it():
    me = socket.gethostname()
    assert dead_here(me, dead_pid())
    assert not dead_here("another-host", dead_pid())
    assert not dead_here(me, os.getppid(), process_started(os.getppid()))
    assert dead_here(me, os.getppid(), "a-start-time-of-another-process")
