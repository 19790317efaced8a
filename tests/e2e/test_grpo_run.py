"""A grpo run through every real service (API, scheduler, worker, endpoint manager) with a judge
endpoint: the run trains on one CPU slot with its rollouts from its own serving process, asks the
judge (the built-in server on the other slot) to score every completion, and the judge, whose idle
timeout is a few seconds, stays READY while the run uses it and is stopped for idleness after."""

from __future__ import annotations

import time

import pytest

from shared.models.tiny_models import ensure_builtin
from shared.store.artifacts import ArtifactRoot
from tests.e2e.stack import start_stack, stop_stack
from tests.e2e.test_endpoints import phase_is
from tests.e2e.test_run_through_services import wait_terminal
from tests.trainer_worker.grpo_doubles import toy_answer, write_toy_dataset

IDLE_TIMEOUT_S = 3


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_url):
    stack = start_stack(tmp_path_factory.mktemp("grpo"), redis_url, endpoint_manager=True)
    yield stack
    stop_stack(stack)


def test_a_grpo_run_with_a_judge_trains_and_keeps_the_judge_alive(stack, tmp_path):
    answer, _ = toy_answer(ensure_builtin("tiny-qwen3", ArtifactRoot(tmp_path / "artifacts")))
    path = write_toy_dataset(tmp_path / "toy.jsonl", answer)
    dataset = stack.post("/v1/datasets", files={"file": ("toy.jsonl", path.read_bytes())}).json()["id"]
    # The run is submitted as soon as the judge is READY: from then on, only the run keeps it alive.
    judge = stack.post("/v1/endpoints", json={"model": "builtin/tiny-qwen3", "name": "grader",
                                              "idleTimeout": IDLE_TIMEOUT_S}).json()
    ready = stack.wait_until("judge READY", lambda: phase_is(stack, judge["id"], "READY", "FAILED", "TERMINATED"),
                             timeout_s=120)
    assert ready["phase"] == "READY", ready
    plan = {"method": "grpo", "model": "builtin/tiny-qwen3", "dataset": dataset,
            "hyperparameters": {"maxSteps": 10, "batchSize": 16, "learningRate": 0.005},
            "grpo": {"numGenerations": 8, "maxCompletionLength": 1, "klPenalty": 0.05,
                     "rewards": [{"function": "exact_match", "weight": 1.0}, {"judge": "grader", "weight": 0.5}]},
            "snapshots": {"everySteps": 5}}
    resp = stack.post("/v1/runs", json=plan)
    assert resp.status_code == 201, resp.text
    run = resp.json()
    assert run["engine"] == "grpo-single"

    # While the run has not ended the judge stays READY, though nothing reaches it through the trainer.
    phases, statuses = set(), set()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        doc = stack.get(f"/v1/runs/{run['id']}").json()
        statuses.add(doc["status"])
        phases.add(stack.get(f"/v1/endpoints/{judge['id']}").json()["phase"])
        if doc["status"] in ("SUCCEEDED", "FAILED", "CANCELLED"):
            break
        time.sleep(0.5)
    done = wait_terminal(stack, run["id"])
    assert done["status"] == "SUCCEEDED", (done, stack.log_tail("worker"))
    assert "RUNNING" in statuses and phases == {"READY"}, (statuses, phases)
    assert done["progress"]["reward"] is not None

    points = stack.get(f"/v1/runs/{run['id']}/metrics").json()["items"]
    assert [p["step"] for p in points] == list(range(1, 11))
    key = "judge:grader"
    for point in points:
        assert set(point["rewards"]) == {"exact_match", key}
        assert 0.0 <= point["rewards"][key]["mean"] <= 1.0 and point["rewardSeconds"] > 0
        assert point["kl"] is not None
        assert 0.0 <= point["equalRewardGroupShare"] <= 1.0  # through the API's metrics schema
    assert points[0]["kl"] == pytest.approx(0.0, abs=1e-7)
    assert all(p["handoffBytes"] > 0 for p in points[1:])
    # each step's rollout sample, through the worker's reporter: both rewards' scores, their weighted
    # total and the advantage, averaging to the step's logged reward
    samples = stack.get(f"/v1/runs/{run['id']}/samples?limit=50").json()
    assert [s["step"] for s in samples["items"]] == list(range(10, 0, -1)) and samples["nextCursor"] is None
    for sample, point in zip(reversed(samples["items"]), points):
        completions = [c for g in sample["groups"] for c in g["completions"]]
        assert sample["groupsInStep"] == 2 and len(completions) == 16
        for c in completions:
            assert set(c["scores"]) == {"exact_match", key}
            assert c["reward"] == pytest.approx(c["scores"]["exact_match"] + 0.5 * c["scores"][key])
        assert sum(c["reward"] for c in completions) / 16 == pytest.approx(point["reward"], abs=1e-5)
    events = [e["message"] for e in stack.get(f"/v1/runs/{run['id']}/events").json()["items"]]
    assert any("KL reference base model" in m for m in events)
    snapshots = done["snapshots"]
    assert len(snapshots) == 2

    # Once the run has ended, nothing keeps the judge: it is stopped for idleness.
    stopped = stack.wait_until("judge idle stop", lambda: phase_is(stack, judge["id"], "TERMINATED"), timeout_s=60)
    assert stopped["phase"] == "TERMINATED"
