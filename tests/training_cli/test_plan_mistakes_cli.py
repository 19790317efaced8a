"""The CLI prints every field the API refused, each with the field it was likely meant to be, and
says how many steps a new run trains (issue 30). Against the real API."""

from __future__ import annotations

import json

from shared.models.tiny_models import SAMPLE_DATASET


def test_every_refused_field_is_printed_one_a_line(real_training):
    dataset = json.loads(real_training("datasets", "create", str(SAMPLE_DATASET), "--name", "sample",
                                       "-o", "json").output)
    result = real_training("runs", "create", "--model", "builtin/tiny-qwen3", "--dataset", dataset["id"],
                           "--set", "hyperparameters.max_steps=5", "--set", "hyperparameters.bogus=1",
                           "--set", "adapter.Rank=4", ok=False)
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0].startswith("error: plan field ")
    assert sorted(lines[1:]) == [
        "  field adapter.Rank: Unknown field. Did you mean rank?",
        "  field hyperparameters.bogus: Unknown field.",
        "  field hyperparameters.max_steps: Unknown field. Did you mean maxSteps?",
    ]


def test_a_run_named_by_its_datasets_name_says_the_steps_it_trains(real_training):
    real_training("datasets", "create", str(SAMPLE_DATASET), "--name", "sample")
    result = real_training("runs", "create", "--model", "builtin/tiny-qwen3", "--dataset", "sample",
                           "--max-steps", "7")
    assert "it trains 7 step(s): from step 0 to step 7" in result.output


def test_runs_logs_process_prints_the_process_log(real_training, real_api):
    from shared.store.artifacts import process_log_key

    dataset = json.loads(real_training("datasets", "create", str(SAMPLE_DATASET), "-o", "json").output)
    run = json.loads(real_training("runs", "create", "--model", "builtin/tiny-qwen3", "--dataset", dataset["id"],
                                   "-o", "json").output)
    missing = real_training("runs", "logs", run["id"], "--process")
    assert missing.output == f"run {run['id']} has no process log yet: it is written once a worker starts training it\n"
    real_api["context"].artifacts.put_file(process_log_key(run["id"], "20261205T000000.000000Z"),
                                           b"12:00:00.000 INFO training started: 8 steps\n")
    assert real_training("runs", "logs", run["id"], "--process").output == (
        "12:00:00.000 INFO training started: 8 steps\n")
    followed = real_training("runs", "logs", run["id"], "--process", "-f", ok=False)
    assert followed.exit_code == 2 and "--process prints the process log as it is now; it takes no -f" in followed.output
