"""-o table|json|yaml on the reads, against the fake API."""

from __future__ import annotations

import json

import yaml

from shared import reasons


def _run(api, **plan):
    dataset = api.app.test_client().post(
        "/v1/datasets", data={"file": (__import__("io").BytesIO(b'{"messages": []}\n'), "d.jsonl")},
        headers={"Authorization": "Bearer test-token-1234"},
    ).get_json()
    body = {"method": "sft", "model": "builtin/tiny-qwen3", "dataset": dataset["id"], **plan}
    return api.app.test_client().post("/v1/runs", json=body, headers={"Authorization": "Bearer test-token-1234"}).get_json()


def test_json_prints_the_api_answer_as_is(training, api):
    result = training("info", "-o", "json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["version"] == "0.6.0"
    assert data["pools"][0]["nodes"][0]["freeGpus"] == 2


def test_yaml_prints_the_api_answer_as_is(training, api):
    result = training("base-models", "get", "builtin/tiny-qwen3", "-o", "yaml")
    assert result.exit_code == 0
    data = yaml.safe_load(result.output)
    assert data["id"] == "builtin/tiny-qwen3"
    assert data["startableRuns"][1]["engine"] == "sft-ddp"


def test_info_table_has_no_engine_row(training):
    result = training("info")
    assert result.exit_code == 0
    assert "0.6.0" in result.output and "local" in result.output
    assert "Engine" not in result.output


def test_base_model_table_lists_startable_runs(training):
    result = training("base-models", "get", "builtin/tiny-qwen3")
    assert result.exit_code == 0, result.output
    out = result.output
    for header in ("Method", "Slots", "Precision", "KL penalty", "Restore", "Engine", "Pools", "GiB/slot"):
        assert header in out
    assert "sft-single" in out and "sft-ddp" in out
    assert "default, big" in out and "0.6" in out
    assert "Runs assume" in out and "rank=8, targetModules=all-linear, batchSize=8" in out


def test_base_model_table_shows_its_generation_defaults(training):
    """Issue 29 item 3: the Generation row says what a request without sampling settings gets."""
    result = training("base-models", "get", "builtin/tiny-qwen3", "-o", "json")
    defaults = json.loads(result.output)["generationDefaults"]
    expected = reasons.generation_defaults_text(defaults)
    assert expected == ("greedy; answers up to 1024 token(s) (the deployment's limit), "
                        "within the rest of its 8192-token context")
    table = training("base-models", "get", "builtin/tiny-qwen3", env={"COLUMNS": "400"})
    line = next(line for line in table.output.splitlines() if "Generation" in line)
    assert expected in line


def test_run_table_shows_every_field(training, api):
    run = _run(api)
    training("runs", "get", run["id"])  # QUEUED -> RUNNING
    result = training("runs", "get", run["id"])  # step 20 of 40
    assert result.exit_code == 0
    for label in ("ID", "Status", "Engine", "Model", "Dataset", "Progress", "Loss", "Tokens/s", "ETA", "Pool",
                  "Devices", "Snapshots", "Detail", "Created"):
        assert label in result.output, label
    assert "RUNNING" in result.output and "20/40" in result.output
    assert "sft-single" in result.output and "local: cpu:0" in result.output


def test_runs_list_table_and_status_filter(training, api):
    run = _run(api)
    result = training("runs", "get", "--status", "queued", "-o", "json")
    assert [r["id"] for r in json.loads(result.output)["items"]] == [run["id"]]
    result = training("runs", "get")
    assert result.exit_code == 0 and run["id"] in result.output and "QUEUED" in result.output


def test_datasets_create_get_and_snapshots_table(training, api, tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text('{"messages": [{"role": "user", "content": "hi"}]}\n' * 3)
    result = training("datasets", "create", str(data), "--name", "mine", "-o", "json")
    assert result.exit_code == 0, result.output
    dataset = json.loads(result.output)
    assert dataset["name"] == "mine" and dataset["rows"] == 3
    listed = training("datasets", "get")
    assert dataset["id"] in listed.output and "mine" in listed.output

    run = _run(api)
    for _ in range(3):
        training("runs", "get", run["id"])
    snaps = training("snapshots", "get", "--run", run["id"])
    assert snaps.exit_code == 0
    assert f"snap-{run['id'][4:]}-40" in snaps.output and "weights + training state" in snaps.output


def test_runs_watch_follows_to_the_end(training, api):
    run = _run(api)
    result = training("runs", "watch", run["id"])
    assert result.exit_code == 0, result.output
    assert "started on local" in result.output
    assert f"\nrun {run['id']}: SUCCEEDED" in result.output  # on a line of its own after the live line (piped)


def test_runs_watch_exits_1_when_the_run_fails(training, api):
    run = _run(api, fail=True)
    result = training("runs", "watch", run["id"])
    assert result.exit_code == 1
    assert "training failed: out of patience" in result.output


def test_runs_logs_follow_prints_time_level_message(training, api):
    run = _run(api)
    result = training("runs", "logs", run["id"], "-f")
    assert result.exit_code == 0
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert "INFO  queued in pool default" in lines[0]
    assert lines[-1].endswith("INFO  succeeded")


def test_runs_delete_cancels(training, api):
    run = _run(api)
    result = training("runs", "delete", run["id"])
    assert result.exit_code == 0
    assert result.output.strip() == f"run {run['id']}: CANCELLED (cancelled by the user)"


def test_watch_and_get_show_reward_and_validation_loss_when_a_run_has_them():
    """A grpo run's progress carries `reward`; a run with a validation dataset `validationLoss`."""
    from rich.console import Console

    from training_cli import tables
    from training_cli.curves import RunCurves
    from training_cli.watch import progress_lines

    run = {"status": "RUNNING", "progress": {"step": 3, "totalSteps": 6, "loss": 0.1694, "reward": -0.0667,
                                             "validationLoss": 2.5, "tokensPerSecond": 1000.0, "etaSeconds": 2}}
    assert "3/6  loss 0.1694  reward -0.0667  ETA 2s  1000 tok/s" in progress_lines(run, RunCurves(), 120)[0].plain
    no_reward = progress_lines({**run, "progress": {**run["progress"], "reward": None}}, RunCurves(), 120)[0].plain
    assert "loss 0.1694  ETA" in no_reward and "reward" not in no_reward
    console = Console(width=200, record=True)
    console.print(tables.run({**run, "id": "run-1", "plan": {"method": "grpo"}}))
    shown = console.export_text()
    assert "Reward" in shown and "-0.0667" in shown and "Validation loss" in shown and "2.5" in shown
