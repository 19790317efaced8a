"""Runs are durable and branchable through the real services (SPEC 2.3, 2.4, 3.3): pause and
resume, a worker killed with SIGKILL, and trainingState branches all end with the adapter of the
uninterrupted run, to 1e-6 on CPU."""

from __future__ import annotations

import json as json_
import signal

import pytest
import requests
from safetensors.torch import load_file

from shared import reasons
from tests.e2e.stack import start_stack, stop_stack
from tests.e2e.test_cli_flow import cli
from tests.e2e.test_run_through_services import upload_sample, wait_terminal

PLAN = {"method": "sft", "model": "builtin/tiny-qwen3",
        "hyperparameters": {"maxSteps": 60, "batchSize": 8, "learningRate": 0.003, "seed": 7},
        "snapshots": {"everySteps": 10}}
# Above the node heartbeat TTL (10 s): by the time the run is declared lost, its node is known to
# be without a worker, so the run waits instead of being granted to the dead node again. (A killed
# worker's node is declared dead sooner, nodeDeadAfterS after its heartbeat expired: issue 27.)
LOST_AFTER_S = 12


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_url):
    stack = start_stack(tmp_path_factory.mktemp("durable"), redis_url,
                        extra_env={"TRAINING_WORKER_LOST_AFTER_S": str(LOST_AFTER_S)})
    yield stack
    stop_stack(stack)


@pytest.fixture(scope="module")
def dataset(stack):
    return upload_sample(stack)


@pytest.fixture(scope="module")
def uninterrupted(stack, dataset):
    run = stack.post("/v1/runs", json={**PLAN, "dataset": dataset}).json()
    done = wait_terminal(stack, run["id"])
    assert done["status"] == "SUCCEEDED", done
    return done


def adapter(stack, snapshot_id: str) -> dict:
    snap = stack.get(f"/v1/snapshots/{snapshot_id}").json()
    return load_file(stack.artifacts / snap["path"] / "adapter" / "adapter_model.safetensors")


def max_diff(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def events(stack, run_id: str) -> list[str]:
    return [e["message"] for e in stack.get(f"/v1/runs/{run_id}/events").json()["items"]]


def step_of(stack, run_id: str) -> int:
    return stack.get(f"/v1/runs/{run_id}").json()["progress"]["step"] or 0


def test_pause_then_resume_continues_exactly(stack, dataset, uninterrupted):
    run = stack.post("/v1/runs", json={**PLAN, "dataset": dataset}).json()
    stack.wait_until("step 15", lambda: step_of(stack, run["id"]) >= 15, every_s=0.05)
    assert stack.post(f"/v1/runs/{run['id']}/pause").json()["pauseRequested"] is True
    paused = stack.wait_until("PAUSED", lambda: (lambda r: r if r["status"] == "PAUSED" else None)(
        stack.get(f"/v1/runs/{run['id']}").json()))
    pause_snap = stack.get(f"/v1/snapshots/{paused['latestSnapshot']}").json()
    assert pause_snap["contents"]["trainingState"] and pause_snap["step"] == paused["progress"]["step"] < 60
    pool = next(p for p in stack.get("/v1/info").json()["pools"] if p["name"] == "default")
    assert pool["freeGpus"] == 2
    # following a PAUSED run returns (nothing moves until it is resumed) instead of waiting for ever
    watched = cli(stack, "runs", "watch", run["id"], check=False)
    assert watched.returncode == 1 and watched.stdout.splitlines()[-2:] == [
        f"run {run['id']}: PAUSED", f"`training runs resume {run['id']}` continues it from its training state"]
    assert "paused" in cli(stack, "runs", "logs", "-f", run["id"]).stdout.lower()
    assert stack.post(f"/v1/runs/{run['id']}/resume").json()["status"] in ("QUEUED", "STARTING", "RUNNING")
    done = wait_terminal(stack, run["id"])
    assert done["status"] == "SUCCEEDED", events(stack, run["id"])
    assert max_diff(adapter(stack, done["latestSnapshot"]), adapter(stack, uninterrupted["latestSnapshot"])) < 1e-6
    # issue 29 item 4: its summary, progress and series cover the whole run, not the resumed part
    points = [p for p in stack.get(f"/v1/runs/{run['id']}/metrics").json()["items"] if p.get("loss") is not None]
    assert [p["step"] for p in points] == list(range(1, 61))
    assert done["progress"]["firstLoss"] == points[0]["loss"]
    assert reasons.run_succeeded(60, points[0]["loss"], points[-1]["loss"]) in events(stack, run["id"])


def test_training_state_branch_matches_the_uninterrupted_run(stack, dataset, uninterrupted):
    snaps = stack.get(f"/v1/snapshots?run={uninterrupted['id']}").json()["items"]
    at_20 = next(s for s in snaps if s["step"] == 20)
    body = {**PLAN, "dataset": dataset, "restore": {"snapshot": at_20["id"], "what": "trainingState"}}
    run = stack.post("/v1/runs", json=body).json()
    assert run["parent"] == {"snapshot": at_20["id"], "run": uninterrupted["id"], "restore": "trainingState"}
    done = wait_terminal(stack, run["id"])
    assert done["status"] == "SUCCEEDED", events(stack, run["id"])
    steps = sorted(s["step"] for s in stack.get(f"/v1/snapshots?run={run['id']}").json()["items"])
    assert steps == [30, 40, 50, 60]  # it continued from step 20: nothing before it is trained again
    assert max_diff(adapter(stack, done["latestSnapshot"]), adapter(stack, uninterrupted["latestSnapshot"])) < 1e-6


def test_a_branch_that_would_train_no_step_is_refused_and_one_that_would_says_how_many(stack, dataset, uninterrupted):
    """Issue 30: `runs branch SNAP@20 --restore trainingState --max-steps 10` used to end SUCCEEDED having
    trained nothing. maxSteps is the step a run ends at: refused, saying why; --max-steps 25 trains 5."""
    snaps = stack.get(f"/v1/snapshots?run={uninterrupted['id']}").json()["items"]
    at_20 = next(s for s in snaps if s["step"] == 20)
    refused = cli(stack, "runs", "branch", at_20["id"], "--restore", "trainingState", "--max-steps", "10", check=False)
    assert refused.returncode == 1 and refused.stderr.splitlines()[0] == (
        f"error: this trainingState branch would train no step: it continues the step count of snapshot "
        f"{at_20['id']} from step 20, and maxSteps 10 ends it at step 10. maxSteps is the step a run ends at, not "
        "the steps it adds: set maxSteps above 20 (maxSteps 70 trains 50 steps), or restore its weights to count "
        "steps from 0")
    created = json_.loads(cli(stack, "runs", "branch", at_20["id"], "--restore", "trainingState", "--max-steps", "25",
                              "-o", "json").stdout)
    assert created["stepRange"] == {"startStep": 20, "endStep": 25, "newSteps": 5, "estimated": False}
    run_id = created["id"]
    done = wait_terminal(stack, run_id)
    assert done["status"] == "SUCCEEDED", events(stack, run_id)
    assert done["stepRange"] == {"startStep": 20, "endStep": 25, "newSteps": 5, "estimated": False}
    steps = [p["step"] for p in stack.get(f"/v1/runs/{run_id}/metrics").json()["items"] if p.get("loss") is not None]
    assert steps == [21, 22, 23, 24, 25]
    # the same --max-steps on a weights branch counts from 0: 10 steps
    weights = cli(stack, "runs", "branch", at_20["id"], "--restore", "weights", "--max-steps", "10")
    assert "it trains 10 step(s): from step 0 to step 10" in weights.stderr


def test_weights_branch_starts_from_the_inherited_adapter(stack, dataset, uninterrupted):
    body = {**PLAN, "dataset": dataset, "hyperparameters": {**PLAN["hyperparameters"], "maxSteps": 10},
            "restore": {"snapshot": uninterrupted["latestSnapshot"], "what": "weights"}}
    done = wait_terminal(stack, stack.post("/v1/runs", json=body).json()["id"])
    assert done["status"] == "SUCCEEDED"
    # It starts where its parent ended, far below a fresh adapter's first loss.
    assert done["progress"]["firstLoss"] < 0.7 * uninterrupted["progress"]["firstLoss"]


def test_worker_killed_mid_run_requeues_and_resumes_exactly(stack, dataset, uninterrupted):
    run = stack.post("/v1/runs", json={**PLAN, "dataset": dataset}).json()
    stack.wait_until("step 22", lambda: step_of(stack, run["id"]) >= 22, every_s=0.05)
    stack.stop("worker", sig=signal.SIGKILL)
    killed_at = step_of(stack, run["id"])
    assert killed_at < 60
    requeued = stack.wait_until("re-queue", lambda: (lambda r: r if r["status"] == "QUEUED" else None)(
        stack.get(f"/v1/runs/{run['id']}").json()), timeout_s=60)
    assert requeued["attempts"] == 1
    assert "node local stopped answering; re-queued keeping its place" in events(stack, run["id"])
    stack.start_worker()
    done = wait_terminal(stack, run["id"])
    assert done["status"] == "SUCCEEDED", events(stack, run["id"])
    log = events(stack, run["id"])
    assert any(m.startswith("restoring trainingState from step-0000") for m in log), log
    assert max_diff(adapter(stack, done["latestSnapshot"]), adapter(stack, uninterrupted["latestSnapshot"])) < 1e-6
    # The killed worker's task can never train the run again: its claim is released.
    assert requests.get(f"{stack.api_url}/v1/runs/{run['id']}", headers=stack.headers()).json()["status"] == "SUCCEEDED"


def test_import_layout1_and_branch_from_it_with_the_cli(stack, dataset, tmp_path):
    """`training snapshots import` a release-0.5 directory, then `training runs branch` from it."""
    import json as json_
    import shutil

    from shared.artifacts import ArtifactRoot
    from shared.plans import parse_plan
    from shared.tiny_models import ensure_builtin
    from tests.e2e.test_run_through_services import SAMPLE
    from tests.trainer_worker.layout1 import make_layout1_snapshot

    plan = parse_plan({**PLAN, "dataset": dataset})
    model_dir = ensure_builtin("tiny-qwen3", ArtifactRoot(stack.artifacts))
    source = make_layout1_snapshot(model_dir, SAMPLE, tmp_path / "old-run",
                                   plan=plan, step=8)
    imported = json_.loads(cli(stack, "snapshots", "import", str(source), "-o", "json").stdout)
    assert imported["layout"] == 1 and imported["imported"] is True and imported["step"] == 8
    assert imported["source"] == f"upload:{source.name}.tar"  # uploaded: the API need not see this machine's files
    assert imported["readable"] == {"weights": True, "trainingState": True}
    assert "Readable here" in cli(stack, "snapshots", "get", imported["id"]).stdout

    overrides = tmp_path / "overrides.yaml"
    overrides.write_text(f"dataset: {dataset}\nhyperparameters: {{maxSteps: 12, batchSize: 8, learningRate: 0.003, seed: 7}}\n")
    for what in ("trainingState", "weights"):
        run = json_.loads(cli(stack, "runs", "branch", imported["id"], "--restore", what, "-f", str(overrides),
                              "-o", "json").stdout)
        assert run["parent"]["restore"] == what
        done = wait_terminal(stack, run["id"])
        assert done["status"] == "SUCCEEDED", events(stack, run["id"])
        steps = sorted(s["step"] for s in stack.get(f"/v1/snapshots?run={run['id']}").json()["items"])
        assert steps == [12]  # no everySteps in the overrides: the final snapshot only
        first_step = stack.get(f"/v1/runs/{run['id']}/metrics").json()["items"][0]["step"]
        assert first_step == (9 if what == "trainingState" else 1)  # trainingState continues after step 8
        assert done["progress"]["step"] == 12

    # A snapshot whose training state needs DeepSpeed, which this deployment cannot read.
    sharded = tmp_path / "sharded"
    shutil.copytree(stack.artifacts / stack.get(f"/v1/snapshots/{imported['id']}").json()["path"], sharded)
    (sharded / "snapshot.json").write_text(json_.dumps({
        "layout": 2, "model": "builtin/tiny-qwen3", "method": "sft", "step": 8, "gpus": 1, "precision": "fp32",
        "weights": {"format": "peft-safetensors", "path": "."},
        "trainingState": {"format": "deepspeed-zero3", "path": "."}}))
    other = json_.loads(cli(stack, "snapshots", "import", "--on-server", str(sharded), "-o", "json").stdout)
    assert other["readable"] == {"weights": True, "trainingState": False} and other["source"] == str(sharded)
    refused = cli(stack, "runs", "branch", other["id"], "--restore", "trainingState", "-f", str(overrides), check=False)
    assert refused.returncode == 1
    assert ("error: this snapshot's training state is in a layout this deployment cannot read as a branch source. "
            "Restore its weights instead") in refused.stdout + refused.stderr
    bad = tmp_path / "not-a-snapshot"
    bad.mkdir()
    result = cli(stack, "snapshots", "import", str(bad), check=False)
    assert result.returncode == 1 and "holds no snapshot.json" in result.stdout + result.stderr
