"""Evaluations and branch comparisons through every real service: REST API -> scheduler -> Celery
worker -> scoring through the shared load spec (SPEC 2.5), on builtin/small-qwen3 and the
reverse-a-word sample, a task its adapters really learn (docs/builtin-models.md).

One parent run trains a few steps and leaves a snapshot; a weights branch of it trains long enough
to learn the task, a trainingState branch only a few steps more. An evaluation scores the parent
over held-out rows (words no training row holds); a comparison scores all three side by side: both
branches have a lower loss than their parent, and the one that learned is the best by exact match,
reversing most held-out words while the others reverse none or almost none.
"""

from __future__ import annotations

import json
from importlib import resources

import pytest
import requests

from tests.e2e.stack import start_stack, stop_stack
from tests.e2e.test_run_through_services import upload_sample, wait_terminal

MODEL = "builtin/small-qwen3"
TRAINING_ROWS = resources.files("shared") / "data" / "sample_reverse.jsonl"
HELD_OUT_ROWS = resources.files("shared") / "data" / "sample_reverse_heldout.jsonl"
EVAL_ROWS = 24
MAX_TOKENS = 8
LEARNING_RATE = 0.004
PARENT_STEPS, LEARNED_STEPS, STATE_STEPS = 4, 500, 8
GRPO_STEPS = 4  # a trainingState branch counts from the parent's step
ENDED = ("SUCCEEDED", "FAILED", "CANCELLED")


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_url):
    stack = start_stack(tmp_path_factory.mktemp("evaluations"), redis_url,
                        extra_models=({"id": MODEL, "builtin": "small-qwen3"},))
    yield stack
    stop_stack(stack)


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
    dataset = upload_rows(stack, [json.loads(line) for line in TRAINING_ROWS.read_text().splitlines()])
    parent = stack.post("/v1/runs", json={
        "model": MODEL, "dataset": dataset, "adapter": {"rank": 16, "alpha": 32},
        "hyperparameters": {"maxSteps": PARENT_STEPS, "batchSize": 16, "learningRate": LEARNING_RATE}}).json()
    parent = wait_terminal(stack, parent["id"])
    assert parent["status"] == "SUCCEEDED", parent
    snap = parent["latestSnapshot"]
    branches = {}
    for what, steps in (("weights", LEARNED_STEPS), ("trainingState", STATE_STEPS)):
        body = {"model": MODEL, "dataset": dataset, "restore": {"snapshot": snap, "what": what},
                "adapter": {"rank": 16, "alpha": 32},
                "hyperparameters": {"maxSteps": steps, "batchSize": 16, "learningRate": LEARNING_RATE}}
        resp = stack.post("/v1/runs", json=body)
        assert resp.status_code == 201, resp.text
        branches[what] = resp.json()["id"]
    for what, run_id in branches.items():
        done = wait_terminal(stack, run_id)
        assert done["status"] == "SUCCEEDED", done
        branches[what] = done
    rows = [json.loads(line) for line in HELD_OUT_ROWS.read_text().splitlines()[:EVAL_ROWS]]
    return {"parent": parent, "snapshot": snap, "branches": branches, "dataset": dataset,
            "eval_dataset": upload_rows(stack, rows)}


def test_an_evaluation_scores_a_snapshot_through_the_worker(stack, lineage):
    body = {"model": MODEL, "snapshot": lineage["snapshot"], "dataset": lineage["eval_dataset"],
            "maxTokens": MAX_TOKENS}
    created = stack.post("/v1/evaluations", json=body)
    assert created.status_code == 201, created.text
    ev = wait_evaluation(stack, created.json()["id"])
    assert ev["status"] == "SUCCEEDED", (ev, stack.get(f"/v1/evaluations/{ev['id']}/events").json())
    metrics = ev["metrics"]
    assert metrics["rows"] == EVAL_ROWS and ev["progress"] == {"rows": EVAL_ROWS, "totalRows": EVAL_ROWS}
    assert metrics["loss"] > 0 and metrics["perplexity"] > 1 and metrics["targetTokens"] > EVAL_ROWS
    # four steps in, the adapter reverses no held-out word (or next to none)
    assert metrics["exactMatch"] <= 0.1 and metrics["rewards"] == {"exact_match": metrics["exactMatch"]}
    assert (ev["run"], ev["step"]) == (lineage["parent"]["id"], PARENT_STEPS)
    assert ev["scheduling"]["node"] == "local" and ev["startedAt"] and ev["finishedAt"]

    rows = stack.get(f"/v1/evaluations/{ev['id']}/rows")
    assert rows.status_code == 200
    per_row = [json.loads(line) for line in rows.text.splitlines()]
    assert len(per_row) == EVAL_ROWS and all("completion" in r and r["loss"] > 0 for r in per_row)
    assert [r["reference"] for r in per_row] == [
        json.loads(line)["messages"][1]["content"] for line in HELD_OUT_ROWS.read_text().splitlines()[:EVAL_ROWS]]
    assert sum(r["exactMatch"] for r in per_row) / EVAL_ROWS == pytest.approx(metrics["exactMatch"])

    events = [e["message"] for e in stack.get(f"/v1/evaluations/{ev['id']}/events").json()["items"]]
    assert events[0] == "queued in pool default for 1 CPU slot(s)"
    assert any(m.startswith("granted 1 CPU slot(s) on node local") for m in events)
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
    assert [rows[s]["step"] for s in snapshots] == [PARENT_STEPS, LEARNED_STEPS, STATE_STEPS]
    parent_loss = rows[lineage["snapshot"]]["metrics"]["loss"]
    for branch in snapshots[1:]:
        assert rows[branch]["metrics"]["loss"] < parent_loss, done["rows"]
    # The branch that learned the task is the best, by loss and by exact match over unseen words.
    learned = weights["latestSnapshot"]
    exact = {s: rows[s]["metrics"]["exactMatch"] for s in snapshots}
    assert exact[learned] >= 0.5 and exact[lineage["snapshot"]] <= 0.1 and exact[state["latestSnapshot"]] <= 0.1, exact
    assert done["best"]["exactMatch"] == [learned] and done["best"]["loss"] == [learned], done["best"]
    assert {"loss", "exactMatch"} <= set(rows[learned]["best"]) and rows[lineage["snapshot"]]["best"] == []
    # each row is a real evaluation of the comparison, listed with its filter
    listed = stack.get(f"/v1/evaluations?comparison={comparison['id']}").json()["items"]
    assert sorted(e["id"] for e in listed) == sorted(r["evaluation"] for r in done["rows"])
    assert [c["id"] for c in stack.get("/v1/comparisons?status=SUCCEEDED").json()["items"]] == [comparison["id"]]


def grpo_rewards(stack, snapshot: str, dataset: str) -> dict:
    """A short grpo branch of `snapshot` rewarded by exact match: its run and its steps' mean rewards."""
    plan = {"method": "grpo", "model": MODEL, "dataset": dataset, "adapter": {"rank": 16, "alpha": 32},
            "restore": {"snapshot": snapshot, "what": "weights"},
            "hyperparameters": {"maxSteps": GRPO_STEPS, "batchSize": 8, "learningRate": 0.0005},
            "grpo": {"numGenerations": 4, "maxCompletionLength": 8, "temperature": 0.7,
                     "rewards": [{"function": "exact_match"}]}}
    resp = stack.post("/v1/runs", json=plan)
    assert resp.status_code == 201, resp.text
    return resp.json()


def test_grpo_rewards_the_branch_that_learned_the_skill_and_not_its_parent(stack, lineage):
    """The reward of a grpo run is the signal the SFT adapter learned: exact match of sampled
    completions over training rows is high from the learned snapshot and near zero from its parent."""
    started = {name: grpo_rewards(stack, snapshot, lineage["dataset"]) for name, snapshot in (
        ("learned", lineage["branches"]["weights"]["latestSnapshot"]), ("parent", lineage["snapshot"]))}
    rewards = {}
    for name, run in started.items():
        done = wait_terminal(stack, run["id"], timeout_s=300)
        assert done["status"] == "SUCCEEDED", done
        points = [p for p in stack.get(f"/v1/runs/{run['id']}/metrics").json()["items"] if p.get("reward") is not None]
        assert len(points) == GRPO_STEPS and all(p["rewards"]["exact_match"]["mean"] == p["reward"] for p in points)
        rewards[name] = sum(p["reward"] for p in points) / len(points)
    assert rewards["learned"] >= 0.3 and rewards["parent"] <= 0.1, rewards
