"""The endpoint manager against a real Redis, the real scheduler pass and the REAL serving process
(the built-in server on the tiny model, started by the manager through its backend).

Each test creates an endpoint the way the API does (services/api/endpoints.py: a QUEUED document,
`ClaimQueue.submit(kind="endpoint", ...)`, the claim id under `scheduling.claim`), runs the
scheduler's `run_once` (grant + dispatch: QUEUED -> STARTING), then the manager's passes in this
process (`EndpointManager.run_once`, as its loop does every 0.5 s) until what it waits for holds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime

import pytest
import requests
import structlog
import yaml

from services.endpoint_manager import manager as manager_module
from services.endpoint_manager.manager import EndpointManager
from services.scheduler.main import run_once as scheduler_pass
from shared.claims.queue import ClaimQueue
from shared.ids import Kind, new_id
from shared.keys import Keys
from shared.store import Store, connect
from tests.conftest import mark_nodes_alive
from tests.shared.plan_fixtures import typed

pytestmark = pytest.mark.timeout(120)


class NoCelery:
    """The scheduler sends no task for an endpoint; this fails the test if it ever tries."""

    def send_task(self, *args, **kwargs):
        raise AssertionError(f"an endpoint claim sent a Celery task: {args}")


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Cluster:
    def __init__(self, config, client):
        self.config, self.client = config, client
        self.store = Store(client, Keys(config.key_prefix))
        self.queue = ClaimQueue(client, self.store.keys, config=config)
        self.log = structlog.get_logger().bind(test=True)
        self.managers: list[EndpointManager] = []
        self.manager = self.new_manager()

    def new_manager(self) -> EndpointManager:
        manager = EndpointManager(config=self.config, client=self.client, node="local", log=self.log)
        self.managers.append(manager)
        return manager

    def create(self, *, model: str = "builtin/tiny-qwen3", **fields) -> str:
        """What the API's create_endpoint writes, then one scheduler pass."""
        endpoint_id = new_id(Kind.ENDPOINT)
        self.store.create({
            "id": endpoint_id, "kind": "endpoint", "name": None, "workload": "endpoints", "model": model,
            "snapshot": None, "gpus": 1, "pool": "default", "idleTimeout": 3600, "startTimeout": 60,
            "phase": "QUEUED", "address": None, "detail": None, "lastRequestAt": None, "readyAt": None,
            "servedModel": endpoint_id, "adapterName": None, "stopRequested": False, "process": None,
            "startingSince": None, "scheduling": {"claim": None, "pool": "default", "node": None, "devices": []},
            **fields,
        })
        claim = self.queue.submit(kind="endpoint", resource_id=endpoint_id, pool="default", gpus=1,
                                  workload="endpoints", model=model)
        self.store.update(endpoint_id, lambda d: {**d, "scheduling": {**d["scheduling"], "claim": claim["id"]}})
        self.grant()
        return endpoint_id

    def grant(self) -> None:
        """One scheduler pass, granting as if the node's endpoint manager answered: the managers of
        these tests run by hand, between passes, and may not hold the node's lease yet. (A marker
        lease is set only while no manager holds one, and removed after the pass.)"""
        key = self.store.keys.endpoint_manager("local")
        marked = self.client.set(key, "test-grant", nx=True, px=60_000)
        try:
            scheduler_pass(config=self.config, queue=self.queue, store=self.store, celery_app=NoCelery(),
                           log=self.log)
        finally:
            if marked and self.client.get(key) == "test-grant":
                self.client.delete(key)

    def doc(self, endpoint_id: str) -> dict:
        return self.store.get(endpoint_id)

    def until(self, what: str, check, *, timeout_s: float = 45, manager: EndpointManager | None = None):
        deadline = time.monotonic() + timeout_s
        while True:
            (manager or self.manager).run_once()
            result = check()
            if result:
                return result
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            time.sleep(0.2)

    def ready(self, endpoint_id: str, **kw) -> dict:
        return self.until(f"{endpoint_id} READY", lambda: (d := self.doc(endpoint_id))["phase"] == "READY" and d, **kw)

    def messages(self, endpoint_id: str) -> list[str]:
        return [e["message"] for e in self.store.events(endpoint_id)]

    def claim(self, endpoint_id: str) -> dict:
        return self.queue.get(self.doc(endpoint_id)["scheduling"]["claim"])

    def close(self):
        for manager in self.managers:
            manager.close(stop_processes=True)
        for doc in self.store.list("ep", limit=100)[0]:  # adopted processes no manager started
            pid = (doc.get("process") or {}).get("pid")
            if pid:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


@pytest.fixture
def cluster(config):
    client = connect(config.redis_url)
    mark_nodes_alive(client, Keys(config.key_prefix), config, managers=False)  # what the node's worker does
    cluster = Cluster(config, client)
    yield cluster
    cluster.close()


def health(address: str) -> int:
    return requests.get(f"{address}/health", timeout=2).status_code


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"


def test_granted_endpoint_starts_answers_and_stops_when_the_user_asks(cluster):
    started = time.monotonic()
    endpoint_id = cluster.create()
    doc = cluster.doc(endpoint_id)
    assert doc["phase"] == "STARTING" and doc["startingSince"]
    assert doc["scheduling"]["node"] == "local" and doc["scheduling"]["devices"] == ["cpu:0"]

    doc = cluster.ready(endpoint_id)
    cold_start_s = time.monotonic() - started
    assert health(doc["address"]) == 200
    assert doc["address"] == f"http://127.0.0.1:{doc['process']['port']}"
    assert doc["process"]["backend"] == "builtin" and doc["readyAt"]
    assert requests.get(f"{doc['address']}/v1/models", timeout=5).status_code == 401  # its secret is needed
    models = requests.get(f"{doc['address']}/v1/models", timeout=5,
                          headers={"Authorization": f"Bearer {doc['process']['apiKey']}"}).json()
    assert endpoint_id in [m["id"] for m in models["data"]]
    assert (cluster.config.artifact_root / doc["process"]["log"]).is_file()
    assert cluster.messages(endpoint_id) == [
        "granted 1 CPU slot(s) on node local (cpu:0)",
        f"serving process started on port {doc['process']['port']} (pid {doc['process']['pid']}, backend builtin)",
        f"ready at {doc['address']}",
    ]
    print(f"cold start to READY: {cold_start_s:.1f}s")

    cluster.store.update(endpoint_id, lambda d: {**d, "stopRequested": True})  # what the API's delete does
    doc = cluster.until("TERMINATED", lambda: (d := cluster.doc(endpoint_id))["phase"] == "TERMINATED" and d)
    assert (doc["detail"], doc["address"]) == ("stopped by the user", None)
    assert cluster.claim(endpoint_id)["state"] == "RELEASED"
    assert gone(doc["process"]["pid"])


def test_idle_stop_waits_for_the_last_request_and_a_judge_in_use_stays(cluster, monkeypatch):
    monkeypatch.setattr(manager_module, "JUDGE_CHECK_EVERY_S", 0.5)
    idle_id = cluster.create(idleTimeout=3)
    judge_id = cluster.create(idleTimeout=1)
    run_id = new_id(Kind.RUN)
    cluster.store.create({"id": run_id, "kind": "run", "status": "RUNNING",
                          "plan": typed({"method": "grpo", "grpo": {"rewards": [{"judge": judge_id}]}}).to_dict()})
    cluster.until("both READY", lambda: all(cluster.doc(e)["phase"] == "READY" for e in (idle_id, judge_id)))

    # A request through the trainer (the API's proxy writes lastRequestAt) postpones the idle stop.
    ready_at = datetime.fromisoformat(cluster.doc(idle_id)["readyAt"].replace("Z", "+00:00")).timestamp()
    cluster.until("1.5s after ready", lambda: time.time() > ready_at + 1.5, timeout_s=5)
    requested_at = time.time()
    cluster.store.update(idle_id, lambda d: {**d, "lastRequestAt": iso(requested_at)})
    cluster.until("past the first deadline", lambda: time.time() > ready_at + 3.8, timeout_s=6)
    assert cluster.doc(idle_id)["phase"] == "READY"
    doc = cluster.until("idle stop", lambda: (d := cluster.doc(idle_id))["phase"] == "TERMINATED" and d,
                        timeout_s=10)
    assert time.time() > requested_at + 3
    assert (doc["detail"], doc["address"]) == ("stopped after 3s without a request", None)
    assert cluster.claim(idle_id)["state"] == "RELEASED" and gone(doc["process"]["pid"])

    # The judge's idle timeout (1 s) is long past, and its run still runs: it stays.
    assert cluster.doc(judge_id)["phase"] == "READY"
    # An evaluation that scores with it as its judge keeps it too, once the run has ended.
    evaluation_id = new_id(Kind.EVALUATION)
    cluster.store.create({"id": evaluation_id, "kind": "evaluation", "status": "RUNNING", "judge": judge_id})
    cluster.store.update(run_id, lambda r: {**r, "status": "SUCCEEDED"})
    time.sleep(2.0)  # several manager passes and judge checks
    assert cluster.doc(judge_id)["phase"] == "READY"
    cluster.store.update(evaluation_id, lambda e: {**e, "status": "SUCCEEDED"})
    doc = cluster.until("judge idle stop", lambda: (d := cluster.doc(judge_id))["phase"] == "TERMINATED" and d,
                        timeout_s=10)
    assert doc["detail"] == "stopped after 1s without a request"


def test_a_lost_serving_process_is_started_again_on_the_same_devices(cluster):
    endpoint_id = cluster.create(startTimeout=60)
    first = cluster.ready(endpoint_id)
    os.kill(first["process"]["pid"], signal.SIGKILL)
    doc = cluster.until("STARTING again", lambda: (d := cluster.doc(endpoint_id))["phase"] == "STARTING" and d)
    assert doc["address"] is None
    assert doc["scheduling"] == first["scheduling"]
    assert doc["startingSince"] > first["readyAt"]  # its start timeout runs again from the loss
    assert cluster.claim(endpoint_id)["state"] == "GRANTED"
    again = cluster.ready(endpoint_id)
    assert again["process"]["pid"] != first["process"]["pid"]
    assert again["scheduling"]["devices"] == ["cpu:0"] and health(again["address"]) == 200
    assert again["readyAt"] == first["readyAt"]  # when the trainer FIRST saw it answering
    assert [e["message"] for e in cluster.store.events(endpoint_id) if e["level"] == "warn"] == [
        "serving process lost; starting it again"]


def test_start_timeout_fails_the_endpoint_and_stops_its_process(cluster):
    endpoint_id = cluster.create(startTimeout=1)  # loading torch alone takes longer
    doc = cluster.until("FAILED", lambda: (d := cluster.doc(endpoint_id))["phase"] == "FAILED" and d)
    assert doc["detail"] == "did not become ready within 1s; see its log"
    assert doc["address"] is None and cluster.claim(endpoint_id)["state"] == "RELEASED"
    assert gone(doc["process"]["pid"])
    assert cluster.messages(endpoint_id)[-1] == "did not become ready within 1s; see its log"


def test_a_server_that_exits_fails_at_once_and_a_model_that_cannot_load_never_starts(cluster, tmp_path):
    broken = tmp_path / "broken-model"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "no-such-architecture"}')
    config = replace(cluster.config, catalog=(*cluster.config.catalog,
                                              {"id": "broken", "path": str(broken), "precisions": ["fp32"]}))
    cluster.manager.close()
    cluster.manager = EndpointManager(config=config, client=cluster.client, node="local", log=cluster.log)
    cluster.managers.append(cluster.manager)

    exits_id = cluster.create(model="broken", startTimeout=60)
    doc = cluster.until("FAILED", lambda: (d := cluster.doc(exits_id))["phase"] == "FAILED" and d)
    assert doc["detail"] == "its serving process exited with code 1 before it was ready; see its log"

    missing_id = cluster.create(model="Qwen/Qwen3-8B")  # its path holds no model
    doc = cluster.until("FAILED", lambda: (d := cluster.doc(missing_id))["phase"] == "FAILED" and d)
    assert doc["detail"] == ("could not start its serving process: catalog entry Qwen/Qwen3-8B points at "
                             "/nonexistent/qwen3-8b, which holds no config.json")
    assert doc["process"] is None and cluster.claim(missing_id)["state"] == "RELEASED"


def test_a_restarted_manager_adopts_the_running_process_and_one_manager_acts_per_node(cluster):
    endpoint_id = cluster.create()
    first = cluster.ready(endpoint_id)
    standby = cluster.new_manager()
    assert standby.run_once() == {"standby": 1}  # the first one holds the node

    cluster.manager.close()  # a manager that exits (without --stop-serving-on-exit)
    for _ in range(3):
        assert "standby" not in standby.run_once()
    doc = cluster.doc(endpoint_id)
    assert (doc["phase"], doc["process"], doc["address"]) == ("READY", first["process"], first["address"])
    assert sum("serving process started" in m for m in cluster.messages(endpoint_id)) == 1

    # The adopted process (not a child of this manager) is stopped all the same.
    cluster.store.update(endpoint_id, lambda d: {**d, "stopRequested": True})
    cluster.until("TERMINATED", lambda: cluster.doc(endpoint_id)["phase"] == "TERMINATED", manager=standby)
    assert cluster.until("process gone", lambda: gone(first["process"]["pid"]), manager=standby, timeout_s=10)


def test_the_manager_process_outlives_its_restart_without_restarting_the_server(cluster, tmp_path):
    """`python -m services.endpoint_manager.main` as the node runs it: SIGTERM ends the manager and
    leaves the serving process running; the next manager adopts it (same pid, same address)."""
    config_file = tmp_path / "deployment.yaml"
    config_file.write_text(yaml.safe_dump({
        "pools": {"default": {"nodes": [{"name": "local", "devices": {"kind": "cpu", "count": 2}}]}},
        "catalog": [{"id": "builtin/tiny-qwen3", "builtin": "tiny-qwen3"}],
    }))
    env = {**os.environ, "TRAINING_CONFIG": str(config_file), "TRAINING_REDIS_URL": cluster.config.redis_url,
           "TRAINING_KEY_PREFIX": cluster.config.key_prefix,
           "TRAINING_ARTIFACT_ROOT": str(cluster.config.artifact_root)}
    cluster.manager.close()  # the in-process manager steps aside for the real ones

    def manager_process(*extra: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "services.endpoint_manager.main", "--node", "local", *extra],
                                env=env, stdout=subprocess.DEVNULL, stderr=(tmp_path / "manager.log").open("ab"))

    def wait(what, check, timeout_s=45):
        deadline = time.monotonic() + timeout_s
        while not (result := check()):
            assert time.monotonic() < deadline, f"timed out waiting for {what}: " + (
                tmp_path / "manager.log").read_text()[-3000:]
            time.sleep(0.2)
        return result

    endpoint_id = cluster.create()
    first = manager_process()
    try:
        doc = wait("READY", lambda: (d := cluster.doc(endpoint_id))["phase"] == "READY" and d)
    finally:
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=20) == 0
    assert health(doc["address"]) == 200  # still serving with no manager at all

    second = manager_process("--stop-serving-on-exit")
    try:
        wait("the second manager to act", lambda: cluster.client.get(
            cluster.store.keys.endpoint_manager("local")) is not None)
        time.sleep(1.5)  # a few passes
        again = cluster.doc(endpoint_id)
        assert (again["phase"], again["process"], again["address"]) == ("READY", doc["process"], doc["address"])
        assert sum("serving process started" in m for m in cluster.messages(endpoint_id)) == 1
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=20) == 0
    assert wait("the server to stop with its manager", lambda: gone(doc["process"]["pid"]), timeout_s=15)
