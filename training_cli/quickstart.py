"""`training quickstart`: the whole product in one command, on the embedded default.

It fine-tunes builtin/small-qwen3 on the bundled reverse-a-word sample, then shows that the run
taught a skill and not only its rows: two evaluations over held-out rows (words no training row
holds), the base model's and the adapter's, and one answer of the adapter served behind an
endpoint through the trainer's OpenAI-compatible proxy. Every figure it prints comes from the
stack's own answers; none is computed here.
"""

from __future__ import annotations

import importlib.resources
import sys
import time
from pathlib import Path
from typing import Any, Callable

from rich.console import Console

from shared import reasons
from shared.config.deployment import training_home
from training_cli.archive import download_adapter
from training_cli.client import ApiClient
from training_cli.errors import CliError
from training_cli.output import duration, items_of, number
from training_cli.tables import event_line
from training_cli.watch import last_events, watch_run

MODEL = "builtin/small-qwen3"
TRAINING_ROWS = "sample_reverse.jsonl"
HELD_OUT_ROWS = "sample_reverse_heldout.jsonl"
ENDPOINT_NAME = "quickstart"
ASKED = "Reverse: stone"
# 500 steps of 16 rows, two passes over the 4,000 training rows, after which the adapter reverses
# ~0.9 of the held-out words (docs/builtin-models.md has the measurements: at 8 rows a step the
# same 500 steps reach only ~0.6).
PLAN = {
    "method": "sft",
    "model": MODEL,
    "adapter": {"rank": 16, "alpha": 32},
    "hyperparameters": {"maxSteps": 500, "batchSize": 16, "learningRate": 0.004},
    "snapshots": {"everySteps": 250},
}
# Answers are a handful of letters: a base model that never stops is cut off early.
EVALUATION_MAX_TOKENS = 16
WAIT_S = 300


def sample_file(name: str) -> Path:
    with importlib.resources.as_file(importlib.resources.files("shared") / "data" / name) as path:
        if not Path(path).exists():
            raise CliError(reasons.sample_dataset_missing(str(path)))
        return Path(path)


def wait_for(what: str, fetch: Callable[[], dict[str, Any]], done: Callable[[dict[str, Any]], bool],
             timeout_s: float = WAIT_S) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        doc = fetch()
        if done(doc):
            return doc
        if time.monotonic() > deadline:
            raise CliError(reasons.gave_up_waiting(what, duration(timeout_s)))
        time.sleep(0.5)


def evaluate(client: ApiClient, dataset: str, snapshot: str | None) -> str:
    body = {"model": MODEL, "dataset": dataset, "maxTokens": EVALUATION_MAX_TOKENS}
    return client.post("/v1/evaluations", {**body, "snapshot": snapshot} if snapshot else body)["id"]


def finished_evaluation(client: ApiClient, evaluation_id: str) -> dict[str, Any]:
    done = wait_for(f"evaluation {evaluation_id}", lambda: client.get(f"/v1/evaluations/{evaluation_id}"),
                    lambda e: e.get("status") in ("SUCCEEDED", "FAILED", "CANCELLED"))
    if done.get("status") != "SUCCEEDED":
        raise CliError(reasons.quickstart_evaluation_ended(evaluation_id, done.get("status"), done.get("detail")))
    return done


def exact_match(evaluation: dict[str, Any]) -> str:
    return number((evaluation.get("metrics") or {}).get("exactMatch"), 2)


def served_answer(client: ApiClient, snapshot: str) -> tuple[dict[str, Any], str]:
    """(the READY endpoint, its answer to ASKED): an existing quickstart endpoint is stopped first,
    so the answer is the new adapter's."""
    for endpoint in items_of(client.get("/v1/endpoints", {"status": "STARTING,READY"})):
        if endpoint.get("name") == ENDPOINT_NAME:
            client.delete(f"/v1/endpoints/{endpoint['id']}")
    created = client.post("/v1/endpoints", {"model": MODEL, "snapshot": snapshot, "name": ENDPOINT_NAME})
    ready = wait_for(f"endpoint {created['id']} to be READY", lambda: client.get(f"/v1/endpoints/{created['id']}"),
                     lambda e: e.get("phase") in ("READY", "FAILED", "TERMINATED"))
    if ready.get("phase") != "READY":
        raise CliError(reasons.quickstart_endpoint_ended(created["id"], ready.get("phase"), ready.get("detail")))
    answer = client.post("/v1/chat/completions", {
        "model": ENDPOINT_NAME, "messages": [{"role": "user", "content": ASKED}], "temperature": 0, "max_tokens": 16})
    return ready, answer["choices"][0]["message"]["content"]


def run_quickstart(client: ApiClient, out: Console) -> None:
    models = [m.get("id") for m in items_of(client.get("/v1/base-models"))]
    if MODEL not in models:
        raise CliError(reasons.quickstart_model_missing(MODEL, list(map(str, models))))
    out.print(f"base model: {MODEL}")
    dataset = client.upload("/v1/datasets", sample_file(TRAINING_ROWS), {"name": "sample_reverse"})
    held_out = client.upload("/v1/datasets", sample_file(HELD_OUT_ROWS), {"name": "sample_reverse_heldout"})
    out.print(f"dataset: {dataset['id']} ({dataset.get('rows', '?')} rows, {dataset.get('format', '?')}); "
              f"held out: {held_out['id']} ({held_out.get('rows', '?')} rows whose words no training row holds)")

    run = client.post("/v1/runs", {**PLAN, "dataset": dataset["id"]})
    out.print(f"run: {run['id']} (engine {run.get('engine', '?')})")
    base_evaluation = evaluate(client, held_out["id"], None)  # on the other slot, while the run trains
    run = watch_run(client, run["id"])
    if run.get("status") != "SUCCEEDED":
        out.print(f"[red]run {run['id']} ended {run.get('status')}[/]: {run.get('detail') or 'no detail'}")
        out.print("its last events:")
        for event in last_events(client, run["id"]):
            out.print(event_line(event))
        sys.exit(1)

    progress = run.get("progress") or {}
    snapshot = run.get("latestSnapshot") or (run.get("snapshots") or [None])[-1]
    out.print(f"[green]run {run['id']} SUCCEEDED[/] in {progress.get('step')} steps")
    out.print(f"  loss: {number(progress.get('firstLoss'))} at the start -> {number(progress.get('loss'))} at the end")
    out.print(f"  tokens/s: {number(progress.get('tokensPerSecond'), 5)}")
    if run.get("startedAt") and run.get("finishedAt"):
        out.print(f"  trained in: {_elapsed(run['startedAt'], run['finishedAt'])}")
    if not snapshot:
        raise CliError(reasons.quickstart_run_without_snapshot(run["id"]))
    adapter_dir = download_adapter(client, snapshot, training_home() / "adapters" / run["id"])
    out.print(f"  final snapshot: {snapshot}")
    out.print(f"  adapter (PEFT format): {adapter_dir}")

    adapter_evaluation = finished_evaluation(client, evaluate(client, held_out["id"], snapshot))
    base = finished_evaluation(client, base_evaluation)
    rows = (adapter_evaluation.get("metrics") or {}).get("rows", "?")
    out.print(f"exact match on the {rows} held-out rows (evaluations {base['id']}, {adapter_evaluation['id']}):")
    out.print(f"  base model {MODEL}: {exact_match(base)}")
    out.print(f"  with the adapter {snapshot}: [green]{exact_match(adapter_evaluation)}[/]")

    endpoint, answer = served_answer(client, snapshot)
    out.print(f"endpoint {endpoint['id']} ({ENDPOINT_NAME}) is READY; asked {ASKED!r}, it answered {answer!r}")
    out.print("")
    out.print(f"the local stack is still up for the next commands (training runs get {run['id']}, "
              "training evaluations rows EVALUATION, training endpoints get); `training down` stops it")
    out.print(f"ask it yourself: curl the trainer's /v1/chat/completions with model {ENDPOINT_NAME!r} "
              "(docs/api.md); it stops when idle, or with: training endpoints delete " + endpoint["id"])


def _elapsed(start: str, end: str) -> str:
    from datetime import datetime

    try:
        delta = datetime.fromisoformat(end.replace("Z", "+00:00")) - datetime.fromisoformat(start.replace("Z", "+00:00"))
    except ValueError:
        return "-"
    return duration(delta.total_seconds())
