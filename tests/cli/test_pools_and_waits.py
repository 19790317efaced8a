"""`training pools get` and a queued run's "Waiting on" row, rendered from API answers."""

from __future__ import annotations

from rich.console import Console

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
    pool = {"name": "default", "gpus": 2, "freeGpus": 2, "heldGpus": 0, "waiting": 0, "quotas": [],
            "holders": [], "queue": [],
            "nodes": [{"name": "local", "deviceKind": "cpu", "gpus": 2, "freeGpus": 2,
                       "freeDevices": ["cpu:0", "cpu:1"], "workerAlive": False}]}
    assert "none (nothing is granted here)" in render(tables.pool(pool))
    pool["nodes"][0]["workerAlive"] = True
    assert "alive" in render(tables.pool(pool))
