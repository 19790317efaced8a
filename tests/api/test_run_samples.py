"""GET /v1/runs/RUN/samples: a grpo run's rollout samples as the worker stores them (the samples
are written here through the store, as RunReporter.samples writes them; the engine's are tested in
tests/trainer_worker/engines/test_grpo_engine.py)."""

from __future__ import annotations

import pytest

from shared import reasons
from shared.store.ids import Kind, new_id
from shared.store.rollout_samples import SAMPLE_STEPS, step_sample


def grpo_run(client, admin, dataset) -> str:
    resp = client.post("/v1/runs", headers=admin, json={
        "method": "grpo", "model": "builtin/tiny-qwen3", "dataset": dataset, "hyperparameters": {"maxSteps": 30},
        "grpo": {"numGenerations": 2, "rewards": [{"function": "exact_match", "weight": 1.0}]}})
    assert resp.status_code == 201, resp.json
    return resp.json["id"]


def store_steps(app, run_id: str, steps) -> None:
    store = app.extensions["trainer"].store
    for step in steps:
        sample = step_sample(step=step, prompts=["q", "q"], completions=[f"a{step}", "b"],
                             scores={"exact_match": [1.0, 0.0]}, weights={"exact_match": 1.0},
                             advantages=[0.7, -0.7], group_size=2)
        store.add_samples(run_id, {**sample, "attempt": 0, "time": "2026-12-05T01:00:00Z"}, keep=SAMPLE_STEPS)


@pytest.fixture
def run_id(app, client, admin, dataset):
    run = grpo_run(client, admin, dataset)
    store_steps(app, run, range(1, 26))
    return run


def test_one_step_has_its_prompts_completions_scores_and_advantages(client, admin, run_id):
    resp = client.get(f"/v1/runs/{run_id}/samples?step=3", headers=admin)
    assert resp.status_code == 200, resp.json
    assert resp.json == {"nextCursor": None, "items": [{
        "step": 3, "groupsInStep": 1, "completionsInStep": 2, "attempt": 0, "time": "2026-12-05T01:00:00Z",
        "groups": [{"prompt": "q", "promptTruncated": False, "completions": [
            {"text": "a3", "truncated": False, "scores": {"exact_match": 1.0}, "reward": 1.0, "advantage": 0.7},
            {"text": "b", "truncated": False, "scores": {"exact_match": 0.0}, "reward": 0.0, "advantage": -0.7}]}]}]}


def test_the_latest_steps_come_first_in_pages(client, admin, run_id):
    first = client.get(f"/v1/runs/{run_id}/samples", headers=admin).json
    assert [s["step"] for s in first["items"]] == list(range(25, 15, -1)) and first["nextCursor"] == "16"
    second = client.get(f"/v1/runs/{run_id}/samples?limit=12&after=16", headers=admin).json
    assert [s["step"] for s in second["items"]] == list(range(15, 3, -1)) and second["nextCursor"] == "4"
    last = client.get(f"/v1/runs/{run_id}/samples?limit=12&after=4", headers=admin).json
    assert [s["step"] for s in last["items"]] == [3, 2, 1] and last["nextCursor"] is None


def test_a_step_not_kept_is_404_saying_which_are(app, client, admin, run_id, dataset):
    resp = client.get(f"/v1/runs/{run_id}/samples?step=26", headers=admin)
    assert resp.status_code == 404
    assert resp.json["error"]["message"] == reasons.run_has_no_samples_at(run_id, 26, [1, 25], SAMPLE_STEPS)
    assert resp.json["error"]["message"] == (f"run {run_id} has no rollout sample of step 26: it keeps the last 200 steps, "
                                    "now steps 1 to 25")
    empty = grpo_run(client, admin, dataset)
    assert client.get(f"/v1/runs/{empty}/samples", headers=admin).json == {"items": [], "nextCursor": None}
    resp = client.get(f"/v1/runs/{empty}/samples?step=1", headers=admin)
    assert resp.json["error"]["message"] == (f"run {empty} has no rollout samples: only a grpo run keeps them, "
                                    "from its first step on")


@pytest.mark.parametrize("query, field, low, high, raw", [
    ("step=0", "step", 1, 2**32 - 1, "0"), ("step=abc", "step", 1, 2**32 - 1, "abc"),
    ("step=-1", "step", 1, 2**32 - 1, "-1"), ("step=99999999999", "step", 1, 2**32 - 1, "99999999999"),
    ("limit=51", "limit", 1, 50, "51"), ("limit=0", "limit", 1, 50, "0"), ("after=x", "after", 1, 2**32 - 1, "x"),
])
def test_bad_query_parameters_are_400_naming_them(client, admin, run_id, query, field, low, high, raw):
    resp = client.get(f"/v1/runs/{run_id}/samples?{query}", headers=admin)
    assert resp.status_code == 400
    assert resp.json["error"]["message"] == f"{field} must be a whole number from {low} to {high}, not {raw!r}"
    assert resp.json["error"]["details"]["field"] == field


def test_another_workloads_run_answers_as_an_unknown_one(client, team, run_id):
    unknown = new_id(Kind.RUN)
    theirs = client.get(f"/v1/runs/{run_id}/samples?step=1", headers=team)
    none = client.get(f"/v1/runs/{unknown}/samples?step=1", headers=team)
    assert theirs.status_code == none.status_code == 404
    assert theirs.json["error"]["message"].replace(run_id, "X") == none.json["error"]["message"].replace(unknown, "X")


def test_the_first_page_is_right_when_a_resume_stored_steps_again(app, client, admin, dataset):
    """A resumed run stores the steps after its last snapshot again: the first page (read from the
    list's tail) and the later ones still hold each step once, its latest attempt."""
    run = grpo_run(client, admin, dataset)
    store_steps(app, run, range(1, 31))
    store_steps(app, run, range(21, 31))  # steps 21..30 trained again
    store_steps(app, run, range(21, 31))  # and again
    first = client.get(f"/v1/runs/{run}/samples?limit=3", headers=admin).json
    assert [s["step"] for s in first["items"]] == [30, 29, 28] and first["nextCursor"] == "28"
    whole = client.get(f"/v1/runs/{run}/samples?limit=50", headers=admin).json
    assert [s["step"] for s in whole["items"]] == list(range(30, 0, -1)) and whole["nextCursor"] is None
    tail = client.get(f"/v1/runs/{run}/samples?limit=12", headers=admin).json
    assert [s["step"] for s in tail["items"]] == list(range(30, 18, -1)) and tail["nextCursor"] == "19"
