"""`training evaluations ...` and `training comparisons ...` against the real API (services/api in
a thread, real Redis), as a user types them. No worker runs here: where a test needs a finished
evaluation, `finish_as_worker` writes what services/trainer_worker/evaluation_job.py writes at the
end (status, metrics, the per-row JSONL). Real scoring through the worker is tests/e2e/test_evaluations.py."""

from __future__ import annotations

import json

import pytest
import yaml

ROWS = "".join(json.dumps({"messages": [{"role": "user", "content": f"q{i}"},
                                        {"role": "assistant", "content": f"a{i}"}]}) + "\n" for i in range(3))


@pytest.fixture
def api(real_api):
    return real_api


@pytest.fixture
def training(real_training):
    return real_training


@pytest.fixture
def dataset(training, tmp_path):
    path = tmp_path / "eval.jsonl"
    path.write_text(ROWS)
    return json.loads(training("datasets", "create", str(path), "-o", "json").output)["id"]


def snapshot(context, *, run: str | None = None, step: int = 10, weights: str = "peft-safetensors") -> str:
    """A snapshot document as the worker's reporter writes it."""
    from shared.store.ids import Kind, new_id
    from tests.conftest import place_snapshot_files

    doc = {"id": new_id(Kind.SNAPSHOT), "kind": "snapshot", "run": run, "workload": "runs", "step": step,
           "layout": 2, "gpus": 1, "method": "sft", "engine": "sft-single", "precision": "fp32",
           "model": "builtin/tiny-qwen3", "contents": {"weights": {"format": weights}, "trainingState": None},
           "final": True, "path": "x", "detail": None}
    place_snapshot_files(context.artifacts.root)
    return context.store.create(doc)["id"]


def finish_as_worker(context, evaluation_id: str, metrics: dict, rows: list[dict]) -> None:
    path = f"evaluations/{evaluation_id}/rows.jsonl"
    context.artifacts.put_file(path, "".join(json.dumps(r) + "\n" for r in rows).encode())
    full = {"rows": len(rows), "loss": None, "perplexity": None, "targetTokens": 0, "exactMatch": None,
            "rewards": {}, "judge": None, "judgeUnparsable": 0, **metrics}
    context.store.update(evaluation_id, lambda d: {**d, "status": "SUCCEEDED", "metrics": full,
                                                   "results": {"path": path, "rows": len(rows)}})


def test_create_get_list_and_delete(training, dataset, tmp_path):
    body = tmp_path / "eval.yaml"
    body.write_text(f"model: builtin/tiny-qwen3\ndataset: {dataset}\ngpus: 2\n")
    created = json.loads(training("evaluations", "create", "-f", str(body), "--gpus", "1", "--max-tokens", "8",
                                  "-o", "json").output)
    assert created["id"].startswith("eval-") and created["status"] == "QUEUED"
    assert created["gpus"] == 1 and created["maxTokens"] == 8 and created["workload"] == "evaluations"
    shown = training("evaluations", "get", created["id"]).output
    assert created["id"] in shown and "QUEUED" in shown and "0/3" in shown and "Waiting on" in shown
    listed = training("evaluations", "get", "--status", "queued").output
    assert created["id"] in listed and "builtin/tiny-qwen3" in listed
    assert training("evaluations", "delete", created["id"]).output.strip() == f"evaluation {created['id']}: CANCELLED"
    assert training("evaluations", "get", "--status", "QUEUED").output.strip() == "no evaluations found"
    logs = training("evaluations", "logs", created["id"]).output
    assert "queued in pool default for 1 CPU slot(s)" in logs and "cancelled by the user" in logs


def test_refusals_are_a_message_and_a_non_zero_exit(training, dataset):
    result = training("evaluations", "create", "--model", "nope/nope", "--dataset", dataset, ok=False)
    assert result.exit_code != 0 and "model nope/nope is not in this deployment's catalog" in result.output
    result = training("evaluations", "create", "--model", "builtin/tiny-qwen3", ok=False)
    assert result.exit_code != 0 and "evaluation field dataset: Missing data for required field." in result.output
    result = training("evaluations", "rows", "eval-nope", ok=False)
    assert result.exit_code != 0 and "evaluation eval-nope does not exist" in result.output


def test_a_finished_evaluation_shows_its_metrics_and_rows(training, dataset, api, tmp_path):
    ev = json.loads(training("evaluations", "create", "--model", "builtin/tiny-qwen3", "--dataset", dataset,
                             "-o", "json").output)
    rows = [{"row": 0, "completion": "a0", "exactMatch": 1.0}, {"row": 1, "completion": "x", "exactMatch": 0.0}]
    finish_as_worker(api["context"], ev["id"], {"loss": 1.25, "perplexity": 3.49, "exactMatch": 0.5,
                                                "rewards": {"exact_match": 0.5}}, rows)
    shown = training("evaluations", "get", ev["id"]).output
    assert "SUCCEEDED" in shown and "1.25" in shown and "3.49" in shown and "Reward exact_match" in shown
    out = tmp_path / "rows.jsonl"
    training("evaluations", "rows", ev["id"], "--out", str(out))
    assert [json.loads(line) for line in out.read_text().splitlines()] == rows
    assert [json.loads(line) for line in training("evaluations", "rows", ev["id"], "--out", "-").output.splitlines()] == rows
    assert json.loads(training("evaluations", "rows", ev["id"], "-o", "json").output) == rows
    assert yaml.safe_load(training("evaluations", "rows", ev["id"], "-o", "yaml").output) == rows


def test_evaluations_get_says_what_max_tokens_it_used(training, dataset, api, monkeypatch):
    """Issue 29 item 3: before scoring, that its rows decide; after, the figure and why, from the
    fields the worker writes (maxTokensUsed, maxTokensFrom, longestReferenceTokens) through the real API."""
    from shared import reasons

    monkeypatch.setenv("COLUMNS", "300")  # one line per row of the table
    ev = json.loads(training("evaluations", "create", "--model", "builtin/tiny-qwen3", "--dataset", dataset,
                             "-o", "json").output)
    assert ev["maxTokens"] is None and ev["maxTokensUsed"] is None
    line = next(x for x in training("evaluations", "get", ev["id"]).output.splitlines()
                if "Max tokens" in x)
    assert reasons.EVALUATION_MAX_TOKENS_PENDING in line
    api["context"].store.update(ev["id"], lambda d: {**d, "maxTokensUsed": 18, "maxTokensFrom": "references",
                                                     "longestReferenceTokens": 2})
    finish_as_worker(api["context"], ev["id"], {"loss": 1.0}, [{"row": 0, "completion": "a0"}])
    doc = json.loads(training("evaluations", "get", ev["id"], "-o", "json").output)
    assert (doc["maxTokensUsed"], doc["maxTokensFrom"], doc["longestReferenceTokens"]) == (18, "references", 2)
    line = next(x for x in training("evaluations", "get", ev["id"]).output.splitlines()
                if "Max tokens" in x)
    assert "18 token(s) (the longest reference, 2, plus a margin of 16)" in line


def test_rows_table_cuts_the_texts_to_one_short_line(training, dataset, api):
    ev = json.loads(training("evaluations", "create", "--model", "builtin/tiny-qwen3", "--dataset", dataset,
                             "-o", "json").output)
    rows = [{"row": 0, "prompt": [{"role": "user", "content": "Reverse: stone"}], "reference": "enots",
             "loss": 1.234567, "completion": "enots", "exactMatch": 1.0, "rewards": {"exact_match": 1.0},
             "judge": None},
            {"row": 1, "prompt": [{"role": "user", "content": "Reverse: a long line\nof words " + "x" * 40}],
             "reference": "sdrow", "loss": 2.0, "completion": "no idea", "exactMatch": 0.0,
             "rewards": {"exact_match": 0.0}, "judge": None}]
    finish_as_worker(api["context"], ev["id"], {"loss": 1.6}, rows)
    assert training("evaluations", "rows", ev["id"]).output == (
        "Row   Loss    Exact match   Reward exact_match   Prompt                                     Completion   Reference\n"
        "0     1.235   1             1                    Reverse: stone                             enots        enots\n"
        "1     2       0             0                    Reverse: a long line of words xxxxxxxxx…   no idea      sdrow\n"
    )


def test_evaluations_logs_as_json_and_yaml(training, dataset, api):
    ev = json.loads(training("evaluations", "create", "--model", "builtin/tiny-qwen3", "--dataset", dataset,
                             "-o", "json").output)
    events = api["context"].store.events(ev["id"])
    assert [e["message"] for e in events] == ["queued in pool default for 1 CPU slot(s)"]
    assert json.loads(training("evaluations", "logs", ev["id"], "-o", "json").output) == events
    assert yaml.safe_load(training("evaluations", "logs", ev["id"], "-o", "yaml").output) == events
    assert training("evaluations", "logs", ev["id"]).output.rstrip().endswith("INFO  queued in pool default for 1 CPU slot(s)")


def test_evaluations_get_run_lists_the_evaluations_of_a_runs_snapshots(training, dataset, api):
    context = api["context"]
    ours, other = snapshot(context, run="run-ours", step=4), snapshot(context, run="run-other")
    mine = [json.loads(training("evaluations", "create", "--model", "builtin/tiny-qwen3", "--snapshot", snap,
                                "--dataset", dataset, "-o", "json").output)["id"] for snap in (ours, other)][0]
    training("evaluations", "create", "--model", "builtin/tiny-qwen3", "--dataset", dataset)  # a base model's
    listed = json.loads(training("evaluations", "get", "--run", "run-ours", "-o", "json").output)["items"]
    assert [(e["id"], e["snapshot"], e["run"], e["step"]) for e in listed] == [(mine, ours, "run-ours", 4)]
    table = training("evaluations", "get", "--run", "run-ours").output
    assert mine in table and ours in table
    assert training("evaluations", "get", "--run", "run-none").output == "no evaluations found\n"


def test_comparisons_create_get_and_the_refusal_sentence(training, dataset, api):
    context = api["context"]
    parent, branch = snapshot(context, step=4), snapshot(context, step=40)
    table = training("comparisons", "create", parent, branch, "--dataset", dataset).output
    assert "QUEUED" in table and parent in table and branch in table
    comparison = json.loads(training("comparisons", "get", "-o", "json").output)["items"][0]
    assert [r["snapshot"] for r in comparison["rows"]] == [parent, branch]
    for row, loss in zip(comparison["rows"], (2.0, 1.5)):
        finish_as_worker(context, row["evaluation"], {"loss": loss, "perplexity": 2.718 ** loss}, [])
    shown = training("comparisons", "get", comparison["id"]).output
    assert "SUCCEEDED" in shown and "1.5 *" in shown and "2 *" not in shown and "* best of the comparison" in shown
    unreadable = snapshot(context, weights="onnx-lora")
    result = training("comparisons", "create", parent, unreadable, "--dataset", dataset, ok=False)
    assert result.exit_code != 0
    assert (f"branch comparisons cannot evaluate snapshot {unreadable} yet: its weights are in a layout a "
            "comparison does not load") in result.output


def test_a_comparison_with_the_base_model_and_no_best_before_every_row_ended(training, dataset, api):
    """Issue 30: `--base` makes the base model a row; the table marks no best while a row runs."""
    context = api["context"]
    tuned = snapshot(context, step=8)
    created = json.loads(training("comparisons", "create", tuned, "--base", "--dataset", dataset, "-o", "json").output)
    assert [(r["snapshot"], r["base"]) for r in created["rows"]] == [(tuned, False), (None, True)]
    finish_as_worker(context, created["rows"][0]["evaluation"], {"loss": 0.5, "perplexity": 1.65}, [])
    context.store.update(created["rows"][1]["evaluation"], lambda d: {**d, "status": "RUNNING"})
    running = training("comparisons", "get", created["id"]).output
    assert "base model" in running and "0.5 *" not in running
    assert "the best is marked once every row has ended" in running
    finish_as_worker(context, created["rows"][1]["evaluation"], {"loss": 2.0, "perplexity": 7.39}, [])
    done = training("comparisons", "get", created["id"]).output
    assert "0.5 *" in done and "2 *" not in done and "* best of the comparison" in done


def test_comparisons_delete_cancels_its_evaluations(training, dataset, api):
    context = api["context"]
    parent, branch = snapshot(context, step=4), snapshot(context, step=40)
    comparison = json.loads(training("comparisons", "create", parent, branch, "--dataset", dataset, "-o", "json").output)
    shown = training("comparisons", "delete", comparison["id"]).output
    assert "CANCELLED" in shown
    result = training("comparisons", "delete", comparison["id"], ok=False)
    assert result.exit_code != 0 and f"comparison {comparison['id']} has already ended (CANCELLED)" in result.output
