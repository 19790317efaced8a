"""The scheduler loop: one pass in-process, and the real entry point as a subprocess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import structlog

from services.scheduler.main import run_once
from shared.lifecycle.states import ClaimState, RunStatus
from shared.messaging.celery_app import node_queue

REPO = Path(__file__).resolve().parents[2]


def wait_for(check, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    return check()


def test_run_once_sweeps_grants_and_dispatches(queue, store, config, make_run, sender):
    first, second = make_run(gpus=2), make_run(gpus=1)
    queue.submit(kind="run", resource_id=first, pool="default", gpus=2, workload="runs")
    queue.submit(kind="run", resource_id=second, pool="default", gpus=1, workload="runs")
    counts = run_once(config=config, queue=queue, store=store, celery_app=sender, log=structlog.get_logger())
    assert counts == {"released": 0, "lost": 0, "granted": 1, "dispatched": 1}
    assert store.get(first)["status"] == RunStatus.STARTING
    assert store.get(second)["status"] == RunStatus.QUEUED
    store.update(first, lambda doc: {**doc, "status": RunStatus.SUCCEEDED.value})  # ended, claim kept
    counts = run_once(config=config, queue=queue, store=store, celery_app=sender, log=structlog.get_logger())
    assert counts == {"released": 1, "lost": 0, "granted": 1, "dispatched": 1}
    assert [s[1][1] for s in sender.sent] == [first, second]


def test_the_entry_point_grants_a_claim_and_stops_on_sigterm(queue, store, make_run, keys, redis_url):
    env = {k: v for k, v in os.environ.items() if k != "TRAINING_CONFIG"}
    env.update(TRAINING_KEY_PREFIX=keys.prefix, TRAINING_REDIS_URL=redis_url, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "services.scheduler.main"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        run_id = make_run()
        claim = queue.submit(kind="run", resource_id=run_id, pool="default", gpus=1, workload="runs")
        dispatched = wait_for(lambda: (queue.get(claim["id"]) or {}).get("dispatchedAt"))
        assert dispatched, "the scheduler did not grant and dispatch the claim"
        assert queue.get(claim["id"])["state"] == ClaimState.GRANTED
        assert store.get(run_id)["status"] == RunStatus.STARTING
        # the real Celery app published one message to the node's queue under our prefix
        assert store.redis.llen(keys.celery_prefix() + node_queue("local")) == 1
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, stderr
    assert '"event": "dispatched"' in stderr and f'"claim": "{claim["id"]}"' in stderr
    assert f'"run": "{run_id}"' in stderr
    assert '"event": "scheduler stopped"' in stderr


def test_the_entry_point_refuses_a_broken_config(tmp_path, keys, redis_url):
    env = dict(os.environ, TRAINING_CONFIG=str(tmp_path / "missing.yaml"),
               TRAINING_KEY_PREFIX=keys.prefix, TRAINING_REDIS_URL=redis_url)
    done = subprocess.run([sys.executable, "-m", "services.scheduler.main"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "missing.yaml does not exist" in done.stderr
