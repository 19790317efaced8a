"""The scheduler under concurrency and crashes, on the real Redis with real scheduler processes
(`python -m services.scheduler.main`) and the real Celery app publishing to node queues under the
test's own prefix. The test itself plays the workers: it ends runs whose claims were dispatched
and releases their claims, and keeps submitting new ones."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from shared.claims.queue import ClaimQueue
from shared.lifecycle.states import ClaimState, RunStatus
from shared.messaging.celery_app import node_queue
from shared.store.ids import Kind, new_id

REPO = Path(__file__).resolve().parents[2]
POOL = {"nodes": [{"name": "n1", "devices": {"kind": "cuda", "count": 4}},
                  {"name": "n2", "devices": {"kind": "cuda", "count": 2}}],
        "quotas": {"team": 3}}


@pytest.fixture
def scheduler_env(tmp_path, keys, redis_url, redis_client):
    for node in POOL["nodes"]:  # as the nodes' workers and endpoint managers would (shared/claims/nodes.py)
        redis_client.set(keys.node_alive(node["name"]), "test")
        redis_client.set(keys.node_ready(node["name"]), "test")
        redis_client.set(keys.endpoint_manager(node["name"]), "test")
    path = tmp_path / "deploy.yaml"
    path.write_text(yaml.safe_dump({"defaultPool": "default", "pools": {"default": POOL}}))
    return {**os.environ, "TRAINING_CONFIG": str(path), "TRAINING_KEY_PREFIX": keys.prefix,
            "TRAINING_REDIS_URL": redis_url, "PYTHONUNBUFFERED": "1"}


def start(env):
    return subprocess.Popen([sys.executable, "-m", "services.scheduler.main"], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Cluster:
    """Submits runs, ends dispatched ones (as workers would), and checks every snapshot of the
    claims: no device of a node is ever held by two claims, no node over capacity."""

    def __init__(self, queue, store, keys):
        # the fixture's queue checks claims against another config; the schedulers use POOL
        self.queue, self.store, self.keys = ClaimQueue(queue.redis, keys), store, keys
        self.claims: list[str] = []
        self.rng = random.Random(7)
        self.snapshots = 0

    def submit(self, count):
        for _ in range(count):
            run_id = new_id(Kind.RUN)
            workload = self.rng.choice(["runs", "runs", "team"])
            gpus = self.rng.choice([1, 1, 2, 3] if workload == "team" else [1, 2, 4])
            self.store.create({"id": run_id, "kind": "run", "status": RunStatus.QUEUED.value, "workload": workload,
                               "pool": "default", "gpus": gpus, "scheduling": None})
            claim = self.queue.submit(kind="run", resource_id=run_id, pool="default", gpus=gpus, workload=workload)
            self.claims.append(claim["id"])

    def docs(self):
        raws = self.store.redis.mget([self.keys.claim(c) for c in self.claims])  # one atomic read
        return [json.loads(r) for r in raws]

    def check(self):
        held = {}
        for claim in self.docs():
            if claim["state"] == ClaimState.GRANTED:
                for device in claim["devices"]:
                    owner = held.setdefault((claim["node"], device), claim["id"])
                    assert owner == claim["id"], f"{claim['node']} {device} held by {owner} and {claim['id']}"
        self.snapshots += 1

    def end_some(self, share=0.5):
        for claim in self.docs():
            if claim["state"] == ClaimState.GRANTED and claim["dispatchedAt"] and self.rng.random() < share:
                self.store.update(claim["resource"], lambda d: {**d, "status": RunStatus.SUCCEEDED.value})
                self.queue.release(claim["id"])

    def settled(self):
        return all(c["state"] == ClaimState.RELEASED for c in self.docs())

    def messages_per_claim(self):
        counts = {}
        for node in ("n1", "n2"):
            for raw in self.store.redis.lrange(self.keys.celery_prefix() + node_queue(node), 0, -1):
                task_id = json.loads(raw)["headers"]["id"]
                counts[task_id] = counts.get(task_id, 0) + 1
        return counts

    def check_end(self):
        docs = self.docs()
        assert all(c["grantedAt"] and c["dispatchedAt"] and c["state"] == ClaimState.RELEASED for c in docs)
        assert self.messages_per_claim() == {c["id"]: 1 for c in docs}, "a grant dispatched twice or never"


def drive(cluster, *, rounds, on_round=lambda i: None, deadline_s=40):
    deadline = time.monotonic() + deadline_s
    for i in range(rounds):
        cluster.submit(6)
        on_round(i)
        for _ in range(5):
            cluster.check()
            time.sleep(0.01)
        cluster.end_some()
    while not cluster.settled():
        assert time.monotonic() < deadline, [  # what was left
            (c["id"], c["state"], c["dispatchedAt"]) for c in cluster.docs() if c["state"] != ClaimState.RELEASED]
        on_round(-1)
        cluster.check()
        cluster.end_some(share=1.0)
        time.sleep(0.02)


def test_two_schedulers_never_hold_one_device_twice(queue, store, keys, scheduler_env):
    cluster = Cluster(queue, store, keys)
    procs = [start(scheduler_env), start(scheduler_env)]
    try:
        drive(cluster, rounds=40)
    finally:
        for proc in procs:
            stop(proc)
    assert len(cluster.claims) == 240 and cluster.snapshots > 200
    cluster.check_end()


def test_a_scheduler_killed_mid_pass_loses_and_duplicates_nothing(queue, store, keys, scheduler_env):
    cluster = Cluster(queue, store, keys)
    procs = [start(scheduler_env)]

    def kill_now_and_then(i):
        if i >= 0 and i % 4 == 3:
            time.sleep(cluster.rng.uniform(0, 0.05))  # somewhere inside a pass
            procs[-1].send_signal(signal.SIGKILL)
            procs[-1].wait()
            procs.append(start(scheduler_env))

    try:
        drive(cluster, rounds=24, on_round=kill_now_and_then)
    finally:
        stop(procs[-1])
    assert len(procs) == 7
    cluster.check_end()


def test_an_endpoint_holding_the_pool_shows_on_the_waiting_run_word_for_word(queue, store, keys, scheduler_env):
    """This seeds what the API writes, an endpoint claim (ClaimQueue.submit(kind="endpoint",
    model=...)) and a QUEUED endpoint document, with the lastRequestAt its proxy records.
    The real scheduler grants the claims; the API derives what the run waits on."""
    from datetime import UTC, datetime

    from services.api.app import create_app
    from shared.config.deployment import parse_config

    claims = ClaimQueue(queue.redis, keys)
    proc = start(scheduler_env)
    try:
        endpoint_id = new_id(Kind.ENDPOINT)
        idle_since = datetime.fromtimestamp(time.time() - (42 * 60 + 10), UTC).isoformat().replace("+00:00", "Z")
        store.create({"id": endpoint_id, "kind": "endpoint", "workload": "endpoints", "model": "Qwen/Qwen3-8B",
                      "phase": "QUEUED", "lastRequestAt": idle_since})
        held = claims.submit(kind="endpoint", resource_id=endpoint_id, pool="default", gpus=4,
                             workload="endpoints", model="Qwen/Qwen3-8B")
        ids = []
        for gpus in (2, 4):  # the first takes node n2; the second waits for n1, held by the endpoint
            run_id = new_id(Kind.RUN)
            store.create({"id": run_id, "kind": "run", "status": RunStatus.QUEUED.value, "workload": "runs",
                          "pool": "default", "gpus": gpus, "scheduling": None})
            claim = claims.submit(kind="run", resource_id=run_id, pool="default", gpus=gpus, workload="runs")
            store.update(run_id, lambda d, c=claim: {**d, "scheduling": {"claim": c["id"], "pool": "default"}})
            ids.append(run_id)
        deadline = time.monotonic() + 10
        while (claims.get(held["id"])["dispatchedAt"] is None or store.get(ids[0])["status"] != "STARTING"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        config = parse_config({"defaultPool": "default", "pools": {"default": POOL},
                               "tokens": [{"token": "t", "name": "admin", "admin": True}]},
                              env={"TRAINING_KEY_PREFIX": keys.prefix, "TRAINING_REDIS_URL": scheduler_env["TRAINING_REDIS_URL"]})
        run = create_app(config).test_client().get(f"/v1/runs/{ids[1]}", headers={"Authorization": "Bearer t"}).json
    finally:
        stop(proc)
    assert run["status"] == "QUEUED"
    assert (run["scheduling"]["position"], run["scheduling"]["reason"]) == (1, "waiting_for_gpus")
    assert run["scheduling"]["waitingText"] == (
        f"held by endpoint {endpoint_id} (Qwen/Qwen3-8B, idle 42m), run {ids[0]} (2 GPU)")
