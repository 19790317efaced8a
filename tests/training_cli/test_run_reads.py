"""`training runs metrics` and `training runs logs -o ...` against the real API (services/api in a
thread, real Redis). No worker runs here: the metric points are written where the worker's
reporter writes them (store.add_metrics, services/trainer_worker/reporter.py); real points from
real training are read in tests/e2e/test_cli_flow.py."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from tests.training_cli.test_evaluations_cli import ROWS

SFT_POINTS = [
    {"step": step, "loss": 2.5 / step, "learningRate": 0.002 * (4 - step) / 3, "gradNorm": 1.23456 * step,
     "tokensPerSecond": 5123.456, "epoch": step / 3, "attempt": 0, "time": "2026-01-02T03:04:05Z"}
    for step in (1, 2, 3)
] + [{"step": 3, "validationLoss": 0.9, "validationPerplexity": 2.4596, "attempt": 0, "time": "2026-01-02T03:04:06Z"}]

GRPO_POINT = {"step": 1, "loss": 0.01, "learningRate": 5e-6, "gradNorm": 0.5, "tokensPerSecond": 100.0, "epoch": 0.1,
              "reward": 0.75, "rewardStd": 0.25, "rewards": {"exact_match": {"mean": 0.5, "std": 0.5}},
              "kl": None, "completionLength": 12.5, "generationSeconds": 1.5, "handoffSeconds": 0.0,
              "handoffBytes": 0, "rewardSeconds": 0.01, "updateSeconds": 0.3, "stepSeconds": 1.81, "attempt": 0,
              "time": "2026-01-02T03:04:05Z"}


def cells(table: str) -> tuple[list[str], list[list[str]]]:
    """The headers and the rows' cells of a list as the CLI prints it (borderless columns, one line
    a row, kubectl's way): each column starts where its header does."""
    lines = table.splitlines()
    starts = [m.start() for m in re.finditer(r"(?:^|(?<=   ))\S", lines[0])]
    ends = starts[1:] + [None]

    def split(line: str) -> list[str]:
        return [line[a:b].strip() for a, b in zip(starts, ends)]

    return split(lines[0]), [split(line) for line in lines[1:]]


@pytest.fixture
def run_id(real_training, tmp_path):
    """A QUEUED run (nothing trains it here)."""
    path = tmp_path / "d.jsonl"
    path.write_text(ROWS)
    dataset = json.loads(real_training("datasets", "create", str(path), "-o", "json").output)["id"]
    created = real_training("runs", "create", "--model", "builtin/tiny-qwen3", "--dataset", dataset, "-o", "json")
    return json.loads(created.output)["id"]


def test_runs_metrics_is_a_table_of_the_columns_the_points_carry(real_training, real_api, run_id):
    store = real_api["context"].store
    assert real_training("runs", "metrics", run_id).output == f"run {run_id} has logged no metrics yet\n"
    for point in SFT_POINTS:
        store.add_metrics(run_id, point)
    assert real_training("runs", "metrics", run_id).output == (
        "Step   Loss     LR          Grad norm   Val loss   Val ppl   Epoch    Tokens/s\n"
        "1      2.5      0.002       1.235       -          -         0.3333   5123.5\n"
        "2      1.25     0.001333    2.469       -          -         0.6667   5123.5\n"
        "3      0.8333   0.0006667   3.704       -          -         1        5123.5\n"
        "3      -        -           -           0.9        2.46      -        -\n"
    )
    headers, rows = cells(real_training("runs", "metrics", run_id, "--last", "2").output)
    assert [row[:3] for row in rows] == [["3", "0.8333", "0.0006667"], ["3", "-", "-"]] and len(headers) == 8
    # json and yaml: the points as the API answers them, every page, one list.
    assert json.loads(real_training("runs", "metrics", run_id, "-o", "json").output) == SFT_POINTS
    assert yaml.safe_load(real_training("runs", "metrics", run_id, "--last", "1", "-o", "yaml").output) == SFT_POINTS[-1:]
    result = real_training("runs", "metrics", "run-nope", ok=False)
    assert result.exit_code == 1 and "error: run run-nope does not exist" in result.output


def test_a_grpo_runs_metrics_show_its_rewards_and_where_the_step_went(real_training, real_api, run_id):
    store = real_api["context"].store
    store.add_metrics(run_id, GRPO_POINT)
    store.add_metrics(run_id, {**GRPO_POINT, "step": 2, "reward": 1.0, "handoffBytes": 3 << 20, "handoffSeconds": 0.04})
    headers, rows = cells(real_training("runs", "metrics", run_id, "-o", "wide").output)
    # kl is null (no KL penalty): no column; attempt is 0 throughout: no column; time: -o json only.
    assert headers == ["Step", "Loss", "LR", "Grad norm", "Reward", "Reward std", "Reward exact_match", "Length",
                       "Epoch", "Tokens/s", "Gen s", "Handoff s", "Handoff", "Reward s", "Update s", "Step s"]
    assert rows[0] == ["1", "0.01", "5e-06", "0.5", "0.75", "0.25", "0.5", "12.5", "0.1", "100", "1.5", "0", "0 B",
                       "0.01", "0.3", "1.81"]
    assert rows[1][4] == "1" and rows[1][11:13] == ["0.04", "3.0 MiB"]
    # without -o wide: the timings and sizes of a step are left to -o wide
    headers, rows = cells(real_training("runs", "metrics", run_id).output)
    assert headers == ["Step", "Loss", "LR", "Grad norm", "Reward", "Reward exact_match", "Epoch", "Tokens/s"]
    assert rows[0] == ["1", "0.01", "5e-06", "0.5", "0.75", "0.5", "0.1", "100"]


def test_runs_logs_prints_the_events_as_json_or_yaml(real_training, real_api, run_id):
    context = real_api["context"]
    context.store.add_event(run_id, "training started: 40 steps")
    events = context.store.events(run_id)
    table = real_training("runs", "logs", run_id).output
    assert "INFO  queued in pool default" in table and "INFO  training started: 40 steps" in table
    assert json.loads(real_training("runs", "logs", run_id, "-o", "json").output) == events
    assert yaml.safe_load(real_training("runs", "logs", run_id, "-o", "yaml").output) == events
    # -f: one document per event as it comes; here the run has already ended, so it stops at once.
    context.store.update(run_id, lambda d: {**d, "status": "CANCELLED"})
    followed = real_training("runs", "logs", run_id, "-f", "-o", "json").output
    assert [json.loads(line) for line in followed.splitlines()] == events
    assert list(yaml.safe_load_all(real_training("runs", "logs", run_id, "-f", "-o", "yaml").output)) == events
    assert real_training("runs", "logs", run_id, "-f").output == table


def test_runs_get_shows_the_memory_estimate_beside_the_measured_peak(real_training, real_api, run_id):
    """Written where the worker's reporter writes it (services/trainer_worker/reporter.py), read back
    through the API by `runs get`: the estimate, the largest peak, each rank's, and how it was measured."""
    from services.trainer_worker.engines.peak_memory import RSS, rank_peak
    from services.trainer_worker.reporter import with_memory_report

    store = real_api["context"].store
    before = real_training("runs", "get", run_id).output.splitlines()
    assert next(line for line in before if line.startswith("Memory")).split() == ["Memory", "-"]  # not yet
    memory = with_memory_report(None, estimate_gib=1.5, activation_checkpointing=False, measured_as=RSS)
    memory = with_memory_report(memory, ranks=[rank_peak(0, trainer_bytes=2 * 1024**3),
                                               rank_peak(1, trainer_bytes=1024**3)])
    store.update(run_id, lambda doc: {**doc, "memory": memory})
    shown = json.loads(real_training("runs", "get", run_id, "-o", "json").output)["memory"]
    assert (shown["estimateGiB"], shown["peakGiB"], [r["peakGiB"] for r in shown["ranks"]]) == (1.5, 2.0, [2.0, 1.0])
    line = next(line for line in real_training("runs", "get", run_id).output.splitlines() if "Memory" in line)
    assert "estimate 1.5 GiB, peak 2 GiB (rank 0 2, rank 1 1), measured as peak resident set" in line
