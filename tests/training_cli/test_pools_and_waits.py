"""`training pools get` and a queued run's "Waiting on" row, rendered from API answers."""

from __future__ import annotations

from rich.console import Console

from tests.training_cli.test_run_reads import cells
from training_cli import tables
from training_cli.watch import _fields

SCHEDULING = {"claim": "claim-1", "pool": "default", "position": 2, "reason": "queued_behind", "quota": None,
              "waitingOn": {"heldBy": [{"kind": "endpoint", "id": "ep-1", "gpus": 1, "model": "Qwen/Qwen3-8B",
                                        "idleSeconds": 2520}],
                            "queuedAhead": [{"kind": "run", "id": "run-0", "gpus": 4}]}}
LINE = "held by endpoint ep-1 (Qwen/Qwen3-8B, idle 42m); queued ahead: run run-0 (4 GPU)"


def render(renderable) -> str:
    console = Console(width=250, record=True)
    for part in renderable if isinstance(renderable, list) else [renderable]:
        console.print(part)
    return console.export_text()


def test_runs_get_prints_the_waiting_line_and_watch_shows_it_while_queued():
    run = {"id": "run-1", "status": "QUEUED", "pool": "default", "scheduling": SCHEDULING}
    out = render(tables.run(run))
    assert LINE in out and "2 in pool default (queued_behind)" in out
    assert _fields(run)["note"] == LINE
    assert _fields({**run, "status": "RUNNING"})["note"] == ""


def test_pools_get_renders_the_list_and_one_pool():
    pool = {"name": "default", "gpus": 2, "freeGpus": 1, "heldGpus": 1, "waiting": 1,
            "nodes": [{"name": "local", "deviceKind": "cpu", "gpus": 2, "freeGpus": 1, "freeDevices": ["cpu:1"]}],
            "quotas": [{"workload": "small", "gpus": 1, "held": 0}],
            "holders": [{"kind": "endpoint", "id": None, "gpus": 1, "node": "local", "devices": ["cpu:0"]}],
            "queue": [{"position": 1, "kind": "run", "id": "run-1", "gpus": 2, "workload": "runs",
                       "reason": "waiting_for_gpus"}]}
    listed = render(tables.pools({"items": [pool], "nextCursor": None}))
    assert "default" in listed and "small 0/1" in listed
    one = render(tables.pool(pool))
    assert "(hidden)" in one and "waiting_for_gpus" in one and "run-1" in one


def test_a_node_without_a_live_worker_says_so():
    """Issue 27, item 4: a dead node is "not answering", not "nothing is granted here" while a run is
    held on it; each of its two services is shown."""
    pool = {"name": "default", "gpus": 2, "freeGpus": 1, "heldGpus": 1, "waiting": 0, "quotas": [],
            "holders": [{"kind": "run", "id": "run-9", "gpus": 1, "node": "local", "devices": ["cpu:0"]}],
            "queue": [],
            "nodes": [{"name": "local", "deviceKind": "cpu", "gpus": 2, "freeGpus": 1, "freeDevices": ["cpu:1"],
                       "workerAlive": False, "workerReady": False, "endpointManagerAlive": True}]}
    lines = render(tables.pool(pool)).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Node "))
    headers, rows = cells("\n".join(lines[at:at + 2]))
    assert [rows[0][headers.index("Worker")], rows[0][headers.index("Endpoint manager")]] == ["not answering", "alive"]
    assert "none (nothing is granted here)" not in render(tables.pool(pool))
    pool["nodes"][0].update(workerAlive=True, workerReady=False)
    assert "alive, still starting" in render(tables.pool(pool))


def test_info_shows_each_nodes_services():
    info = {"version": "1", "apiUrl": "http://x", "methods": ["sft"], "catalogSize": 1,
            "pools": [{"name": "default", "nodes": [
                {"name": "node-a", "deviceKind": "cpu", "gpus": 1, "freeGpus": 1, "workerAlive": False,
                 "workerReady": False, "endpointManagerAlive": False},
                {"name": "node-b", "deviceKind": "cpu", "gpus": 1, "freeGpus": 0, "workerAlive": True,
                 "workerReady": True, "endpointManagerAlive": True}]}]}
    lines = render(tables.info(info)).splitlines()
    node_a = next(line for line in lines if "node-a" in line)
    node_b = next(line for line in lines if "node-b" in line)
    assert node_a.count("not answering") == 2 and node_b.count("alive") == 2 and "Endpoint manager" in "".join(lines)


def test_a_waiting_run_names_a_free_node_whose_worker_is_not_answering():
    run = {"id": "run-2", "status": "QUEUED", "pool": "default", "scheduling": {
        "claim": "claim-2", "pool": "default", "position": 1, "reason": "waiting_for_gpus", "quota": None,
        "waitingOn": {"heldBy": [{"kind": "run", "id": "run-1", "gpus": 1}], "queuedAhead": [],
                      "notAnswering": [{"node": "node-a", "freeGpus": 1, "service": "worker"}]}}}
    assert ("node node-a has 1 free GPU but its worker is not answering; held by run run-1 (1 GPU)"
            in render(tables.run(run)))
