"""Evaluation scoring on the real tiny model (services/trainer_worker/engines/evaluate.py): metrics
that add up from the per-row results, cancel between rows, and the same greedy outputs as a real
built-in serving process over the same load spec (SPEC 6, "Same load everywhere")."""

from __future__ import annotations

import json
import math
from importlib import resources

import pytest
import requests

from services.trainer_worker.engines.evaluate import TokenBudget, completion_budget, greedy_completion, score
from shared import rewards
from shared.artifacts import ArtifactRoot
from shared.load_spec import load_model, load_spec_for
from shared.serving.generation import Generator
from tests.shared.serving.serving import ServingProcess, make_adapter

TINY_ENTRY = {"id": "builtin/tiny-qwen3", "builtin": "tiny-qwen3"}
SAMPLE = resources.files("shared") / "data" / "sample_sft.jsonl"
ADAPTER = "snap-test"
MAX_TOKENS = 12


def sample_rows(count: int) -> list[dict]:
    return [json.loads(line) for line in SAMPLE.read_text().splitlines()[:count]]


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> ArtifactRoot:
    return ArtifactRoot(tmp_path_factory.mktemp("artifacts"))


@pytest.fixture(scope="module")
def spec(artifacts, tmp_path_factory):
    """The load spec an evaluation (or an endpoint) of the tiny model with one adapter gets."""
    base = load_spec_for(entry=TINY_ENTRY, artifacts=artifacts, served_model_name="eval-test")
    adapter = make_adapter(base.model_dir, tmp_path_factory.mktemp("adapter") / "a", seed=3)
    return load_spec_for(entry=TINY_ENTRY, artifacts=artifacts, served_model_name="eval-test",
                         adapters={ADAPTER: str(adapter)})


@pytest.fixture(scope="module")
def generator(spec):
    model, tokenizer = load_model(spec)
    return Generator(model, tokenizer, spec)


def test_the_completion_budget_follows_the_request_the_references_or_the_model(generator):
    """Issue 29 item 3: asked, it is the request's; else the longest reference plus a margin (16, or
    a quarter of it); with no references, the model's default answer length."""
    rows = [{"prompt": "a", "completion": "x"}, {"prompt": "b", "answer": "one two three"}]
    assert completion_budget(generator, rows, 7) == TokenBudget(7, "request")
    longest = max(len(generator.tokenizer(r, add_special_tokens=False)["input_ids"]) for r in ("x", "one two three"))
    assert completion_budget(generator, rows, None) == TokenBudget(longest + 16, "references", longest)
    essay = " ".join(["word"] * 200)
    tokens = len(generator.tokenizer(essay, add_special_tokens=False)["input_ids"])
    assert completion_budget(generator, [{"prompt": "p", "completion": essay}], None) == TokenBudget(
        tokens + math.ceil(tokens / 4), "references", tokens)
    assert completion_budget(generator, [{"prompt": "no reference"}], None) == TokenBudget(64, "model")


def test_a_greedy_completion_never_runs_past_the_context(generator):
    prompt = [5] * (generator.max_context - 3)
    text, finish, tokens = greedy_completion(generator, "eval-test", prompt, 500)
    assert (tokens, finish) == (3, "length")


def test_metrics_add_up_from_the_rows(generator):
    rows = sample_rows(6) + [{"prompt": "Add: 2 + 2", "completion": " 4"}, {"prompt": "Say hi", "answer": "hi"}]
    scores = score(generator, ADAPTER, rows, max_tokens=MAX_TOKENS)
    metrics, per_row = scores.metrics, scores.rows
    assert metrics["rows"] == len(rows) == len(per_row) and not scores.stopped
    assert [r["row"] for r in per_row] == list(range(len(rows)))
    # every row has a reference (last assistant message, completion, or answer) and so a loss
    with_loss = [r for r in per_row if "loss" in r]
    assert len(with_loss) == 8 and all(r["loss"] > 0 and r["targetTokens"] > 0 for r in with_loss)
    assert metrics["targetTokens"] == sum(r["targetTokens"] for r in with_loss)
    weighted = sum(r["loss"] * r["targetTokens"] for r in with_loss) / metrics["targetTokens"]
    assert metrics["loss"] == pytest.approx(weighted) and metrics["perplexity"] == pytest.approx(math.exp(weighted))
    # every row has a reference here: exact match and the default exact_match reward agree with it
    assert per_row[0]["reference"] == rows[0]["messages"][-1]["content"] and per_row[7]["reference"] == "hi"
    assert metrics["exactMatch"] == pytest.approx(sum(r["exactMatch"] for r in per_row) / len(rows))
    assert metrics["rewards"] == {"exact_match": metrics["exactMatch"]}
    assert all(r["completionTokens"] >= 1 and r["finishReason"] in ("stop", "length") for r in per_row)
    assert metrics["judge"] is None and metrics["judgeUnparsable"] == 0


def test_named_rewards_and_a_judge_are_recorded_per_row(generator):
    rows = sample_rows(4)
    answers = iter(["8", "no idea", "7/10", ""])
    scores = score(generator, ADAPTER, rows, max_tokens=4,
                   rewards=[{"function": "length", "target": 5}, {"function": "regex", "pattern": r".*"}],
                   judge=lambda prompt, completion, row: next(answers))
    assert set(scores.metrics["rewards"]) == {"length", "regex"} and scores.metrics["rewards"]["regex"] == 1.0
    assert [r["judge"] for r in scores.rows] == [0.8, None, 0.7, None]
    assert scores.metrics["judge"] == pytest.approx(0.75) and scores.metrics["judgeUnparsable"] == 2
    assert scores.rows[1]["judgeAnswer"] == "no idea"


def test_a_stop_request_ends_scoring_between_rows(generator):
    seen = []
    scores = score(generator, ADAPTER, sample_rows(6), max_tokens=2, should_stop=lambda: len(seen) >= 2,
                   on_row=lambda done, total: seen.append(done))
    assert scores.stopped and scores.metrics["rows"] == 2 and seen == [1, 2]


def test_an_evaluation_and_an_endpoint_give_the_same_greedy_outputs(spec, generator, tmp_path):
    """One load spec, two places: the evaluation's scoring here and a real built-in serving process
    (started the way the endpoint manager starts it). Same prompts, same tokens."""
    rows = sample_rows(8) + [{"prompt": "Reverse: abc", "completion": "cba"}]
    scores = score(generator, ADAPTER, rows, max_tokens=MAX_TOKENS)
    server = ServingProcess(spec, tmp_path).start().wait_ready(timeout_s=120)
    try:
        served = []
        for row in rows:
            if "messages" in row:
                body = {"model": ADAPTER, "messages": row["messages"][:-1], "temperature": 0, "max_tokens": MAX_TOKENS}
                answer = requests.post(f"{server.base_url}/v1/chat/completions", json=body, timeout=60).json()
                served.append(answer["choices"][0]["message"]["content"])
            else:
                body = {"model": ADAPTER, "prompt": row["prompt"], "temperature": 0, "max_tokens": MAX_TOKENS}
                answer = requests.post(f"{server.base_url}/v1/completions", json=body, timeout=60).json()
                served.append(answer["choices"][0]["text"])
        assert [r["completion"] for r in scores.rows] == served
        assert len(set(served)) > 1  # the prompts really lead to different outputs
        # The same serving process as a judge: its (tiny-model) answers are parsed or counted.
        judged = score(generator, ADAPTER, rows[:3], max_tokens=4, judge=lambda prompt, completion, row:
                       rewards.ask_judge(server.base_url, rewards.judge_messages(prompt, completion, row),
                                         model=ADAPTER))
        assert all("judgeAnswer" in r for r in judged.rows)
        assert judged.metrics["judgeUnparsable"] == sum(r["judge"] is None for r in judged.rows)
    finally:
        server.terminate()
