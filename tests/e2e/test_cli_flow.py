"""The `training` CLI, as a user types it, against the running services: upload -> run ->
SUCCEEDED (its loss curve beside the bar) -> its TensorBoard events downloaded and read back ->
snapshot whose adapter loads with peft and generates."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.e2e.test_run_through_services import SAMPLE

TRAINING = shutil.which("training") or str(Path(__import__("sys").executable).parent / "training")


def cli(stack, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([TRAINING, *args], env=stack.env, capture_output=True, text=True, timeout=300)
    if check:
        assert result.returncode == 0, f"training {' '.join(args)}\n{result.stdout}\n{result.stderr}"
    return result


def test_cli_upload_train_download_and_generate(stack, tmp_path):
    dataset = json.loads(cli(stack, "datasets", "create", str(SAMPLE), "--name", "sample", "-o", "json").stdout)
    assert dataset["rows"] == 256 and dataset["format"] == "chat"

    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump({"method": "sft", "model": "builtin/tiny-qwen3", "dataset": dataset["id"],
                                         "hyperparameters": {"maxSteps": 40, "learningRate": 0.003}}))
    run = yaml.safe_load(cli(stack, "runs", "create", "-f", str(plan_file), "--batch-size", "8", "-o", "yaml").stdout)
    assert run["plan"]["hyperparameters"]["batchSize"] == 8 and run["plan"]["hyperparameters"]["maxSteps"] == 40

    watched = cli(stack, "runs", "watch", run["id"])
    assert "SUCCEEDED" in watched.stdout

    table = cli(stack, "runs", "get", run["id"]).stdout
    assert "SUCCEEDED" in table and "sft-single" in table and "40/40" in table

    logs = cli(stack, "runs", "logs", run["id"]).stdout
    assert "training started: 40 steps" in logs and "INFO" in logs

    # One metrics point per step (logging_steps=1), as the worker logged them; the table's last rows.
    points = json.loads(cli(stack, "runs", "metrics", run["id"], "-o", "json").stdout)
    assert [p["step"] for p in points] == list(range(1, 41)) and all(p["loss"] > 0 for p in points)
    assert points[-1]["loss"] < points[0]["loss"]
    from tests.training_cli.test_run_reads import cells

    headers, rows = cells(cli(stack, "runs", "metrics", run["id"], "--last", "2").stdout)
    assert headers == ["Step", "Loss", "LR", "Grad norm", "Epoch", "Tokens/s"]
    assert [row[0] for row in rows] == ["39", "40"]

    # The bar's last state carries the loss curve of all 40 steps (24 columns).
    from training_cli.curves import sparkline

    assert f"loss {sparkline([p['loss'] for p in points])}" in watched.stdout

    # The worker wrote TensorBoard events (the default tracker); they download with the token.
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    logdir = Path(cli(stack, "runs", "download-logs", run["id"], str(tmp_path / "tb")).stdout.strip())
    assert logdir == tmp_path / "tb" / run["id"]
    events = EventAccumulator(str(logdir))
    events.Reload()
    loss = events.Scalars("loss")
    assert [e.step for e in loss] == list(range(1, 41))
    assert [e.value for e in loss] == pytest.approx([p["loss"] for p in points], rel=1e-6)
    assert {"learningRate", "gradNorm", "tokensPerSecond"} <= set(events.Tags()["scalars"])

    snapshots = json.loads(cli(stack, "snapshots", "get", "--run", run["id"], "-o", "json").stdout)["items"]
    final = next(s for s in snapshots if s["final"])
    assert final["step"] == 40 and final["layout"] == 2

    target = tmp_path / "adapter"
    cli(stack, "snapshots", "download", final["id"], str(target))
    assert (target / "adapter_model.safetensors").exists()

    import torch
    from peft import PeftModel

    from shared.models import load_causal_lm, load_tokenizer

    model_dir = stack.artifacts / "models" / "tiny-qwen3"
    base = load_causal_lm(model_dir, "fp32")
    tokenizer = load_tokenizer(model_dir)
    model = PeftModel.from_pretrained(base, str(target))
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "Reverse: stone"}],
                                           tokenize=False, add_generation_prompt=True)
    inputs = tokenizer(prompt, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=8, do_sample=False)
    assert out.shape[1] > inputs["input_ids"].shape[1]
    # The adapter changed the model: its greedy answer differs from the base model's logits.
    with torch.no_grad():
        tuned = model(**inputs).logits
        with model.disable_adapter():
            plain = model(**inputs).logits
    assert not torch.allclose(tuned, plain)


def test_cli_bad_input_is_a_message_and_exit_1(stack, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": []}\n')
    result = cli(stack, "datasets", "create", str(bad), check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr + result.stdout
    assert "error: dataset line 1, field messages: must be a non-empty list of {role, content} objects" in result.stderr + result.stdout
    result = cli(stack, "runs", "get", "run-doesnotexist", check=False)
    assert result.returncode == 1 and "error: run run-doesnotexist does not exist" in result.stderr + result.stdout
    result = cli(stack, "runs", "create", "--model", "builtin/tiny-qwen3", "--dataset", "ds-x", "--gpus", "2", check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
