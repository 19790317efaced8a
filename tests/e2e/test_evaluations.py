"""Evaluations and branch comparisons through every real service: REST API -> scheduler -> Celery
worker -> scoring on the tiny model through the shared load spec (SPEC 2.5).

One parent run trains a few steps and leaves a snapshot; a weights branch and a trainingState
branch of it train further on the task. An evaluation scores the parent snapshot; a comparison
scores all three side by side, and the branches, trained further, score better than their parent.
"""

from __future__ import annotations

import json

import pytest
import requests

from tests.e2e.test_run_through_services import SAMPLE, upload_sample, wait_terminal

EVAL_ROWS = 12
MAX_TOKENS = 6
ENDED = ("SUCCEEDED", "FAILED", "CANCELLED")


def upload_rows(stack, rows: list[dict]) -> str:
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    resp = stack.post("/v1/datasets", files={"file": ("eval.jsonl", data)})
    assert resp.status_code == 201, resp.text
    return resp.json()["id"]


def wait_evaluation(stack, evaluation_id: str, timeout_s: float = 240) -> dict:
    return stack.wait_until(f"evaluation {evaluation_id} to end", lambda: (
        lambda e: e if e["status"] in ENDED else None)(stack.get(f"/v1/evaluations/{evaluation_id}").json()),
        timeout_s=timeout_s)


@pytest.fixture(scope="module")
def lineage(stack):
    """A parent snapshot and two branches trained further from it on the same task."""
    dataset = upload_sample(stack)
    parent = stack.post("/v1/runs", json={
        "model": "builtin/tiny-qwen3", "dataset": dataset,
        "hyperparameters": {"maxSteps": 4, "batchSize": 8, "learningRate": 0.003}}).json()
    parent = wait_terminal(stack, parent["id"])
    assert parent["status"] == "SUCCEEDED", parent
    snap = parent["latestSnapshot"]
    branches = {}
    for what, steps in (("weights", 40), ("trainingState", 44)):  # a trainingState branch counts from step 4
        body = {"model": "builtin/tiny-qwen3", "dataset": dataset, "restore": {"snapshot": snap, "what": what},
                "hyperparameters": {"maxSteps": steps, "batchSize": 8, "learningRate": 0.003}}
        resp = stack.post("/v1/runs", json=body)
        assert resp.status_code == 201, resp.text
        branches[what] = resp.json()["id"]
    for what, run_id in branches.items():
        done = wait_terminal(stack, run_id)
        assert done["status"] == "SUCCEEDED", done
        branches[what] = done
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines()[-EVAL_ROWS:]]
    return {"parent": parent, "snapshot": snap, "branches": branches, "eval_dataset": upload_rows(stack, rows)}


def test_an_evaluation_scores_a_snapshot_through_the_worker(stack, lineage):
    body = {"model": "builtin/tiny-qwen3", "snapshot": lineage["snapshot"], "dataset": lineage["eval_dataset"],
            "maxTokens": MAX_TOKENS}
    created = stack.post("/v1/evaluations", json=body)
    assert created.status_code == 201, created.text
    ev = wait_evaluation(stack, created.json()["id"])
    assert ev["status"] == "SUCCEEDED", (ev, stack.get(f"/v1/evaluations/{ev['id']}/events").json())
    metrics = ev["metrics"]
    assert metrics["rows"] == EVAL_ROWS and ev["progress"] == {"rows": EVAL_ROWS, "totalRows": EVAL_ROWS}
    assert metrics["loss"] > 0 and metrics["perplexity"] > 1 and metrics["targetTokens"] > EVAL_ROWS
    assert 0 <= metrics["exactMatch"] <= 1 and metrics["rewards"] == {"exact_match": metrics["exactMatch"]}
    assert (ev["run"], ev["step"]) == (lineage["parent"]["id"], 4)
    assert ev["scheduling"]["node"] == "local" and ev["startedAt"] and ev["finishedAt"]

    rows = stack.get(f"/v1/evaluations/{ev['id']}/rows")
    assert rows.status_code == 200
    per_row = [json.loads(line) for line in rows.text.splitlines()]
    assert len(per_row) == EVAL_ROWS and all("completion" in r and r["loss"] > 0 for r in per_row)
    assert sum(r["exactMatch"] for r in per_row) / EVAL_ROWS == pytest.approx(metrics["exactMatch"])

    events = [e["message"] for e in stack.get(f"/v1/evaluations/{ev['id']}/events").json()["items"]]
    assert events[0] == "queued in pool default for 1 GPU(s)"
    assert any(m.startswith("granted 1 GPU(s) on node local") for m in events)
    assert any(m.startswith(f"scoring {EVAL_ROWS} row(s)") for m in events)
    assert events[-1] == f"scored {EVAL_ROWS} row(s): loss {metrics['loss']:.4f}"
    pool = next(p for p in stack.get("/v1/info").json()["pools"] if p["name"] == "default")
    assert pool["freeGpus"] == 2  # its CPU slot is given back


def test_cancel_a_running_evaluation(stack, lineage):
    body = {"model": "builtin/tiny-qwen3", "dataset": upload_sample(stack), "maxTokens": 64}
    ev = stack.post("/v1/evaluations", json=body).json()
    stack.wait_until("the evaluation to score rows",
                     lambda: stack.get(f"/v1/evaluations/{ev['id']}").json()["progress"]["rows"] > 0)
    cancelled = requests.delete(f"{stack.api_url}/v1/evaluations/{ev['id']}", headers=stack.headers(), timeout=30)
    assert cancelled.json()["cancelRequested"] is True
    done = wait_evaluation(stack, ev["id"], timeout_s=60)
    assert done["status"] == "CANCELLED" and done["detail"] == "cancelled by the user"
    assert done["progress"]["rows"] < 256 and done["metrics"] is None


def test_a_comparison_shows_branches_trained_further_scoring_better(stack, lineage):
    weights, state = lineage["branches"]["weights"], lineage["branches"]["trainingState"]
    snapshots = [lineage["snapshot"], weights["latestSnapshot"], state["latestSnapshot"]]
    created = stack.post("/v1/comparisons", json={"snapshots": snapshots, "dataset": lineage["eval_dataset"],
                                                  "maxTokens": MAX_TOKENS})
    assert created.status_code == 201, created.text
    comparison = created.json()
    assert comparison["id"].startswith("cmp-") and comparison["status"] in ("QUEUED", "RUNNING")
    done = stack.wait_until("the comparison to end", lambda: (lambda c: c if c["status"] in ENDED else None)(
        stack.get(f"/v1/comparisons/{comparison['id']}").json()), timeout_s=300)
    assert done["status"] == "SUCCEEDED", done
    rows = {r["snapshot"]: r for r in done["rows"]}
    assert [r["snapshot"] for r in done["rows"]] == snapshots
    assert [(rows[s]["run"], rows[s]["restore"]) for s in snapshots] == [
        (lineage["parent"]["id"], "none"), (weights["id"], "weights"), (state["id"], "trainingState")]
    assert [rows[s]["step"] for s in snapshots] == [4, 40, 44]
    parent_loss = rows[lineage["snapshot"]]["metrics"]["loss"]
    for branch in snapshots[1:]:
        assert rows[branch]["metrics"]["loss"] < parent_loss, done["rows"]
    assert done["best"]["loss"] != [lineage["snapshot"]] and done["best"]["loss"][0] in snapshots[1:]
    assert "loss" in rows[done["best"]["loss"][0]]["best"] and "loss" not in rows[lineage["snapshot"]]["best"]
    # each row is a real evaluation of the comparison, listed with its filter
    listed = stack.get(f"/v1/evaluations?comparison={comparison['id']}").json()["items"]
    assert sorted(e["id"] for e in listed) == sorted(r["evaluation"] for r in done["rows"])
    assert [c["id"] for c in stack.get("/v1/comparisons?status=SUCCEEDED").json()["items"]] == [comparison["id"]]
