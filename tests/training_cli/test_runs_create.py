"""`runs create -f FILE` with flags merged over the file's body."""

from __future__ import annotations

import json

import yaml


def _dataset(training, tmp_path) -> str:
    data = tmp_path / "d.jsonl"
    data.write_text('{"messages": []}\n')
    return json.loads(training("datasets", "create", str(data), "-o", "json").output)["id"]


def test_yaml_file_with_flags_merged_over_it(training, api, tmp_path):
    dataset = _dataset(training, tmp_path)
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump({
        "method": "sft", "model": "builtin/tiny-qwen3", "dataset": dataset,
        "hyperparameters": {"maxSteps": 40, "learningRate": 0.002, "seed": 7},
        "execution": {"gpus": 1, "pool": "default"},
    }))
    result = training("runs", "create", "-f", str(plan), "--max-steps", "60", "--gpus", "2",
                      "--snapshot-every", "20", "--set", "hyperparameters.warmupSteps=5", "-o", "json")
    assert result.exit_code == 0, result.output
    sent = api.state["runs"][json.loads(result.output)["id"]]["plan"]
    assert sent == {
        "method": "sft", "model": "builtin/tiny-qwen3", "dataset": dataset,
        "hyperparameters": {"maxSteps": 60, "learningRate": 0.002, "seed": 7, "warmupSteps": 5},
        "execution": {"gpus": 2, "pool": "default"},
        "snapshots": {"everySteps": 20},
    }


def test_json_file_and_flags_only(training, api, tmp_path):
    dataset = _dataset(training, tmp_path)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"method": "sft", "dataset": dataset}))
    result = training("runs", "create", "-f", str(plan), "--model", "builtin/tiny-qwen3", "--workload", "team-a")
    assert result.exit_code == 0, result.output
    (run,) = api.state["runs"].values()
    assert run["plan"] == {"method": "sft", "dataset": dataset, "model": "builtin/tiny-qwen3", "workload": "team-a"}
    assert f"training runs watch {run['id']}" in result.output

    result = training("runs", "create", "--method", "sft", "--dataset", dataset, "--learning-rate", "0.003",
                      "--batch-size", "8", "-o", "yaml")
    assert yaml.safe_load(result.output)["plan"]["hyperparameters"] == {"learningRate": 0.003, "batchSize": 8}


def test_a_file_that_is_not_a_mapping_is_refused(training, tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text("- just\n- a list\n")
    result = training("runs", "create", "-f", str(plan))
    assert result.exit_code == 1
    assert result.output.strip() == f"error: {plan} must hold a mapping (the run's request body)"
