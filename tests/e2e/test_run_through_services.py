"""A run trains through every real service: REST API -> scheduler -> Celery worker -> SFT engine."""

from __future__ import annotations

import hashlib
import io
import tarfile
from importlib import resources

SAMPLE = resources.files("shared") / "data" / "sample_sft.jsonl"


def upload_sample(stack) -> str:
    resp = stack.post("/v1/datasets", files={"file": ("sample.jsonl", SAMPLE.read_bytes())})
    assert resp.status_code == 201, resp.text
    return resp.json()["id"]


def wait_terminal(stack, run_id: str, timeout_s: float = 240) -> dict:
    return stack.wait_until(
        f"run {run_id} to end",
        lambda: (lambda r: r if r["status"] in ("SUCCEEDED", "FAILED", "CANCELLED") else None)(
            stack.get(f"/v1/runs/{run_id}").json()),
        timeout_s=timeout_s,
    )


def test_sft_run_trains_to_succeeded_and_its_adapter_loads(stack, tmp_path):
    dataset = upload_sample(stack)
    plan = {"method": "sft", "model": "builtin/tiny-qwen3", "dataset": dataset, "validationDataset": dataset,
            "hyperparameters": {"maxSteps": 30, "batchSize": 8, "learningRate": 0.003},
            "snapshots": {"everySteps": 10}}
    run = stack.post("/v1/runs", json=plan).json()
    assert run["status"] in ("QUEUED", "STARTING", "RUNNING"), run  # the scheduler may be quicker than the answer
    done = wait_terminal(stack, run["id"])
    assert done["status"] == "SUCCEEDED", (done, stack.get(f"/v1/runs/{run['id']}/events").json())
    assert done["progress"]["step"] == 30 and done["progress"]["totalSteps"] == 30
    assert done["progress"]["loss"] < done["progress"]["firstLoss"]
    assert done["scheduling"]["node"] == "local" and len(done["scheduling"]["devices"]) == 1
    assert done["startedAt"] and done["finishedAt"]
    # its training process measured its own peak, shown beside its estimate (never below it)
    memory = done["memory"]
    assert memory["peakGiB"] > 0.1 and memory["estimateGiB"] >= memory["peakGiB"], memory
    assert memory["measuredAs"] == "peak resident set" and [r["rank"] for r in memory["ranks"]] == [0]

    metrics = stack.get(f"/v1/runs/{run['id']}/metrics").json()["items"]
    losses = [m["loss"] for m in metrics if m.get("loss") is not None]
    assert len(losses) >= 25
    assert sum(losses[-3:]) / 3 < 0.8 * sum(losses[:3]) / 3
    assert all(m["tokensPerSecond"] > 0 for m in metrics if m.get("tokensPerSecond") is not None)
    # The validation dataset is scored at each snapshot step (no validation.everySteps given).
    validation = [(m["step"], m["validationLoss"]) for m in metrics if m.get("validationLoss") is not None]
    assert [step for step, _ in validation] == [10, 20, 30], validation
    assert validation[-1][1] < validation[0][1] and done["progress"]["validationLoss"] == validation[-1][1]

    messages = [e["message"] for e in stack.get(f"/v1/runs/{run['id']}/events").json()["items"]]
    assert messages[0].startswith("queued in pool default")
    assert any(m.startswith("granted 1 CPU slot(s) on node local") for m in messages), messages
    assert "training started: 30 steps" in messages

    snaps = stack.get(f"/v1/snapshots?run={run['id']}").json()["items"]
    assert sorted(s["step"] for s in snaps) == [10, 20, 30]
    final = next(s for s in snaps if s["final"])
    assert final["id"] == done["latestSnapshot"] and final["layout"] == 2 and final["gpus"] == 1
    assert final["contents"]["weights"]["format"] == "peft-safetensors"

    # The GPUs (CPU slots) are given back.
    pool = next(p for p in stack.get("/v1/info").json()["pools"] if p["name"] == "default")
    assert pool["freeGpus"] == 2

    archive = stack.get(f"/v1/snapshots/{final['id']}/adapter")
    assert archive.status_code == 200
    with tarfile.open(fileobj=io.BytesIO(archive.content)) as tar:
        tar.extractall(tmp_path / "adapter", filter="data")
    assert (tmp_path / "adapter" / "adapter_model.safetensors").exists()
    # the snapshot recorded its files as written; the downloaded weights are those bytes
    recorded = final["files"]["adapter/adapter_model.safetensors"]
    weights = (tmp_path / "adapter" / "adapter_model.safetensors").read_bytes()
    assert (len(weights), hashlib.sha256(weights).hexdigest()) == (recorded["bytes"], recorded["sha256"])
    assert {"adapter/adapter_config.json", "training_state/optimizer.pt"} <= set(final["files"])
    assert final["readable"] == {"weights": True, "trainingState": True} and final["damaged"] == {
        "weights": None, "trainingState": None}


def test_a_length_that_leaves_no_row_fails_in_a_sentence_and_keeps_the_process_log(stack):
    """Issue 30: `maxSeqLength: 8` ended with torch's `num_samples=0` and no log behind it."""
    from tests.e2e.test_cli_flow import cli

    dataset = upload_sample(stack)
    run = stack.post("/v1/runs", json={"model": "builtin/tiny-qwen3", "dataset": dataset,
                                       "hyperparameters": {"maxSteps": 2, "maxSeqLength": 8}}).json()
    done = wait_terminal(stack, run["id"])
    assert done["status"] == "FAILED"
    assert done["detail"].startswith(
        "training failed: no row is left to train on: none of the 256 row(s) has a token the loss is taken over "
        "within maxSeqLength 8 (the shortest prompt fills "), done["detail"]
    log = stack.get(f"/v1/runs/{run['id']}/process-log")
    assert log.status_code == 200 and log.headers["Content-Type"].startswith("text/plain")
    assert "takes the run (attempt 0)" in log.text and "Traceback (most recent call last)" in log.text
    assert "no row is left to train on" in log.text and "INFO loaded builtin/tiny-qwen3" in log.text
    printed = cli(stack, "runs", "logs", run["id"], "--process").stdout
    assert "Traceback (most recent call last)" in printed


def test_cancel_a_running_run(stack):
    dataset = upload_sample(stack)
    plan = {"model": "builtin/tiny-qwen3", "dataset": dataset, "hyperparameters": {"maxSteps": 5000}}
    run = stack.post("/v1/runs", json=plan).json()
    stack.wait_until("the run to run", lambda: stack.get(f"/v1/runs/{run['id']}").json()["progress"]["step"] > 2)
    assert requests_delete(stack, run["id"]).json()["cancelRequested"] is True
    done = wait_terminal(stack, run["id"], timeout_s=60)
    assert done["status"] == "CANCELLED" and done["detail"] == "cancelled by the user"
    assert done["progress"]["step"] < 5000


def requests_delete(stack, run_id):
    import requests

    return requests.delete(f"{stack.api_url}/v1/runs/{run_id}", headers=stack.headers(), timeout=30)


def test_curl_quickstart_example(stack, tmp_path):
    import subprocess

    from tests.e2e.stack import REPO

    out = tmp_path / "adapter"
    result = subprocess.run(["bash", str(REPO / "examples/curl/quickstart.sh"), str(SAMPLE), str(out)],
                            env=stack.env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "status SUCCEEDED" in result.stdout
    assert (out / "adapter_model.safetensors").exists() and (out / "adapter_config.json").exists()
