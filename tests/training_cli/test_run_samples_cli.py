"""`training runs samples` against the real API (real Redis; the samples are written where the
worker's reporter writes them, store.add_samples): readable blocks that fit 80 columns."""

from __future__ import annotations

import json

import pytest

from shared.store.rollout_samples import SAMPLE_STEPS, step_sample
from tests.training_cli.test_evaluations_cli import ROWS


@pytest.fixture
def run_id(real_training, tmp_path):
    """A QUEUED run (nothing trains it here: the samples are written as its worker would)."""
    path = tmp_path / "d.jsonl"
    path.write_text(ROWS)
    dataset = json.loads(real_training("datasets", "create", str(path), "-o", "json").output)["id"]
    created = real_training("runs", "create", "--model", "builtin/tiny-qwen3", "--dataset", dataset, "-o", "json")
    return json.loads(created.output)["id"]


def add(real_api, run, step, *, prompts, completions, scores, weights, advantages, group_size):
    sample = step_sample(step=step, prompts=prompts, completions=completions, scores=scores, weights=weights,
                         advantages=advantages, group_size=group_size)
    real_api["context"].store.add_samples(run, {**sample, "attempt": 0, "time": "2026-12-05T01:00:00Z"},
                                          keep=SAMPLE_STEPS)


def test_a_step_reads_as_prompt_and_completion_lines(real_training, real_api, run_id, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert real_training("runs", "samples", run_id).output == (
        f"run {run_id} has no rollout samples yet (only a grpo run keeps them, one per step)\n")
    add(real_api, run_id, 4, prompts=["What is 2+2?"] * 2, completions=["4", "five\nor six"],
        scores={"exact_match": [1.0, 0.0]}, weights={"exact_match": 1.0}, advantages=[0.7071, -0.7071], group_size=2)
    assert real_training("runs", "samples", run_id).output == (
        "step 4: 1 of 1 prompt group(s), 2 completion(s) in the step\n"
        "prompt 1: What is 2+2?\n"
        "  #  REWARD ADVANT. exact_matc COMPLETION\n"
        "  1   1.000  +0.707      1.000 4\n"
        "  2   0.000  -0.707      0.000 five ⏎ or six\n")
    as_json = json.loads(real_training("runs", "samples", run_id, "--step", "4", "-o", "json").output)
    assert as_json[0]["groups"][0]["completions"][1]["text"] == "five\nor six"


@pytest.mark.parametrize("columns", [80, 120])
def test_long_texts_and_many_rewards_never_pass_the_width(real_training, real_api, run_id, monkeypatch,
                                                           columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    chat = [{"role": "system", "content": "Answer in JSON. " * 20}, {"role": "user", "content": "word " * 300}]
    for step, rewards in ((1, ["exact_match", "length", "regex"]), (2, [f"judge:endpoint-{i}" for i in range(6)])):
        add(real_api, run_id, step, prompts=[chat] * 8, completions=["long answer " * 200] * 8,
            scores={k: [0.5] * 8 for k in rewards}, weights={k: 1.0 for k in rewards}, advantages=[0.0] * 8,
            group_size=4)
    out = real_training("runs", "samples", run_id, "--last", "2").output
    lines = out.splitlines()
    assert lines[0] == "step 2: 2 of 2 prompt group(s), 8 completion(s) in the step"
    assert max(len(line) for line in lines) <= columns
    assert lines[1].startswith("prompt 1: system: Answer in JSON.") and lines[1].endswith("…")
    # three rewards sit beside the text; six too at 120 columns, and at 80 on a line of their own under
    # each completion
    step_1 = lines[lines.index("step 1: 2 of 2 prompt group(s), 8 completion(s) in the step"):]
    assert step_1[2].split() == ["#", "REWARD", "ADVANT.", "exact_matc", "length", "regex", "COMPLETION"]
    assert step_1[3].split()[:6] == ["1", "1.500", "+0.000", "0.500", "0.500", "0.500"]
    if columns == 80:
        assert lines[2].split() == ["#", "REWARD", "ADVANT.", "COMPLETION"]
        assert lines[4].startswith("    judge:endpoint-0=0.500 judge:endpoint-1=0.500")
    else:
        assert lines[2].split() == ["#", "REWARD", "ADVANT."] + ["judge:endp"] * 6 + ["COMPLETION"]


def test_a_step_not_kept_is_an_error_naming_the_steps_kept(real_training, real_api, run_id):
    add(real_api, run_id, 3, prompts=["q"], completions=["a"], scores={"exact_match": [1.0]},
        weights={"exact_match": 1.0}, advantages=[0.0], group_size=1)
    result = real_training("runs", "samples", run_id, "--step", "9", ok=False)
    assert result.exit_code != 0
    assert f"run {run_id} has no rollout sample of step 9: it keeps the last 200 steps, now steps 3 to 3" in result.output
