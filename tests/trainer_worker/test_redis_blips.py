"""A Redis blip under a worker (issue 14; docs/faults.md): a real redis-server of the test's own,
killed with SIGKILL and started again on the same port and directory (tests/restartable_redis.py),
under the worker's real reporter, lease, fenced writes and `run_job.train_run`.

The one stand-in: where a test needs an engine, `_run_engine` is replaced by a function that reports
like one (started, a metrics point, an event) around the outage; it trains nothing.
"""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest
import redis
import structlog

from services.trainer_worker import lease as lease_module
from services.trainer_worker import leased_work, run_job
from services.trainer_worker.engines.base import TrainingResult
from services.trainer_worker.lease import Lease, LeaseLost, fenced_update
from services.trainer_worker.node_worker import Worker
from services.trainer_worker.reporter import RunReporter
from shared.claims.queue import ClaimQueue
from shared.lifecycle.states import RunStatus
from shared.store.artifacts import ArtifactRoot
from shared.store.documents import Store, connect
from shared.store.ids import Kind, new_id
from shared.store.keys import Keys
from shared.store.redis_retry import RetryFor, connect_retrying
from tests.conftest import make_config, mark_nodes_alive
from tests.restartable_redis import RestartableRedis

LOG = structlog.get_logger()
KEYS = Keys("blip:")


@pytest.fixture
def server(tmp_path):
    with RestartableRedis(tmp_path / "redis") as server:
        yield server


def restart_after(server: RestartableRedis, seconds: float, then=None) -> threading.Thread:
    def restart():
        time.sleep(seconds)
        server.start()
        if then is not None:
            then()

    thread = threading.Thread(target=restart, daemon=True)
    thread.start()
    return thread


def running_run(store: Store, **fields) -> dict:
    return store.create({"id": new_id(Kind.RUN), "kind": "run", "status": RunStatus.RUNNING.value,
                         "workload": "runs", "progress": {"step": 0}, "scheduling": {}, "fence": None, **fields})


def leased(client, store: Store, run: dict, holder: str = "local/host/1") -> Lease:
    lease = Lease(client, KEYS, run["id"], holder)
    assert lease.acquire()
    store.update(run["id"], lambda doc: {**doc, "fence": lease.fence})
    return lease


def test_reporter_writes_ride_out_a_one_second_outage(server, tmp_path):
    client = connect_retrying(server.url, 30)
    store = Store(client, KEYS)
    run = running_run(store)
    lease = leased(client, store, run)
    reporter = RunReporter(store=store, artifacts=ArtifactRoot(tmp_path / "artifacts"), run=store.get(run["id"]),
                           lease=lease, log=LOG)
    reporter.total_steps = 10
    try:
        server.kill()
        restarted = restart_after(server, 1.0)
        began = time.monotonic()
        reporter.metrics({"step": 1, "loss": 2.5})  # metrics, then the (fenced) progress write
        reporter.event("written across the blip")
        assert reporter.stop_request() is None
        waited = time.monotonic() - began
        restarted.join()
        assert 0.9 < waited < 10, waited
        assert [m["step"] for m in store.metrics(run["id"])] == [1]
        assert store.get(run["id"])["progress"]["step"] == 1
        assert "written across the blip" in [e["message"] for e in store.events(run["id"])]
        assert not lease.lost.is_set()
    finally:
        lease.release()


def test_a_stale_writer_is_still_refused_after_a_blip(server):
    """A's write is cut by the outage after it read the document; once Redis is back, B takes the run
    (a newer fence) before A's retry lands. A's retried write reads again, finds B's fence, and writes
    nothing: the retry is no replay."""
    client_a = redis.Redis.from_url(server.url, decode_responses=True, retry=RetryFor(30, first_s=1.0))
    store_a = Store(client_a, KEYS)
    run = running_run(store_a)
    lease_a = leased(client_a, store_a, run, "local/host/A")
    client_b = connect(server.url)

    def b_takes_over():
        store_b = Store(client_b, KEYS)
        fence_b = int(client_b.incr(KEYS.fence(run["id"])))
        store_b.update(run["id"], lambda doc: {**doc, "fence": fence_b, "progress": {"step": 7, "by": "B"}})

    calls = []

    def change(doc):
        calls.append(doc["fence"])
        if len(calls) == 1:  # read done, write not sent yet: Redis dies here
            server.kill()
            restart_after(server, 0.2, then=b_takes_over)
        return {**doc, "progress": {"step": 99, "by": "A"}}

    try:
        with pytest.raises(LeaseLost):
            fenced_update(store_a, lease_a, "run", change)
        assert calls == [lease_a.fence]  # the retry read B's fence and refused before calling change again
        doc = connect(server.url).get(KEYS.resource(run["id"]))
        assert '"by": "B"' in doc and '"by": "A"' not in doc
    finally:
        lease_a._stop.set()


def test_a_lease_that_lapsed_during_an_outage_is_taken_again_while_its_fence_is_the_holders(server, monkeypatch):
    monkeypatch.setattr(lease_module, "LEASE_TTL_MS", 1000)
    monkeypatch.setattr(lease_module, "RENEW_EVERY_S", 0.2)
    client = connect_retrying(server.url, 30)
    store = Store(client, KEYS)
    run = running_run(store)
    lease = leased(client, store, run)
    try:
        server.kill()
        time.sleep(1.5)  # longer than the lease's TTL: Redis replays it from its AOF as expired
        server.start()
        deadline = time.monotonic() + 10
        while client.get(lease.key) != lease.token and time.monotonic() < deadline:
            time.sleep(0.05)
        assert client.get(lease.key) == lease.token and not lease.lost.is_set()
        fenced_update(store, lease, "run", lambda doc: {**doc, "progress": {"step": 3}})  # still its run

        # Someone else took the run meanwhile (a new fence): the lapsed lease is not taken again.
        client.incr(KEYS.fence(run["id"]))
        client.delete(lease.key)
        assert lease.lost.wait(5)
    finally:
        lease.release()


def test_a_worker_whose_redis_stays_away_past_its_budget_stops_without_failing_the_run(
        server, tmp_path, monkeypatch):
    config = dataclasses.replace(make_config(server.url, "blip:", tmp_path / "artifacts"), redis_retry_s=1.0)
    worker = Worker(config, "local")
    store = worker.store
    mark_nodes_alive(worker.redis, KEYS, config)
    run = running_run(store, plan={}, attempts=0)
    queue = ClaimQueue(worker.redis, KEYS, config=config)
    claim = queue.submit(kind="run", resource_id=run["id"], pool="default", gpus=1, workload="runs")
    [claim] = queue.grant_pass(config, "default")
    store.update(run["id"], lambda doc: {**doc, "status": RunStatus.STARTING.value,
                                         "scheduling": {"claim": claim["id"], "node": "local"}})

    def engine_whose_store_goes_away(worker, run, devices, reporter):
        reporter.started(total_steps=10)
        reporter.metrics({"step": 1, "loss": 2.0})
        server.kill()
        reporter.metrics({"step": 2, "loss": 1.9})  # retried for 1 s, then raised
        return TrainingResult(final_step=2, first_loss=2.0, last_loss=1.9, stopped_early=False)

    monkeypatch.setattr(run_job, "_run_engine", engine_whose_store_goes_away)
    monkeypatch.setattr(run_job, "restore_for", lambda *a, **k: None)
    began = time.monotonic()
    outcome = leased_work.execute(worker, "run", run["id"], claim["id"])
    assert outcome == "stopped: store unreachable"
    assert time.monotonic() - began < 15
    server.start()
    doc = store.get(run["id"])
    assert doc["status"] == RunStatus.RUNNING and doc.get("detail") is None  # not FAILED: left to be re-queued
    assert not [e for e in store.events(run["id"]) if e["level"] == "error"]
