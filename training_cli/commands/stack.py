"""`training up`, `training down`, `training status` and `training quickstart` (the embedded
default, SPEC 1)."""

from __future__ import annotations

import importlib.resources
import sys
import time
from pathlib import Path

import click

from shared import reasons
from shared.config import training_home
from training_cli import local_stack
from training_cli.archive import download_adapter
from training_cli.client import ApiClient
from training_cli.errors import CliError
from training_cli.output import console, dump, duration, items_of, list_table, number, output_option
from training_cli.stack_state import StackState
from training_cli.tables import event_line
from training_cli.watch import last_events, watch_run

QUICKSTART_MODEL = "builtin/tiny-qwen3"
# Long enough (a few seconds on 2 cores) that the adapter served behind an endpoint answers with
# tokens of the task; at 60 steps the tiny model still ends every answer at once.
QUICKSTART_PLAN = {
    "method": "sft",
    "model": QUICKSTART_MODEL,
    "adapter": {"rank": 16, "alpha": 32},
    "hyperparameters": {"maxSteps": 200, "batchSize": 8, "learningRate": 0.01},
    "snapshots": {"everySteps": 50},
}


@click.command()
@click.option("--detach", is_flag=True, help="Return once every service answers (they keep running).")
@click.option("--port", type=click.IntRange(1, 65535), default=8600, show_default=True, help="The API's port.")
def up(detach: bool, port: int) -> None:
    """Bring the local stack up: Redis (if none answers), API, scheduler, one worker and endpoint
    manager per node, under a supervisor that starts again any of them that dies."""
    out = console()
    stack, watcher = local_stack.up(port=port, out=out)
    if stack.already_up:
        out.print(f"the local stack is already up at {stack.api_url}")
        return
    out.print(f"[green]the local stack is up[/] at {stack.api_url} (logs in {training_home() / 'stack' / 'logs'})")
    out.print("the CLI now uses it: try `training info`")
    if detach:
        out.print("stop it with: training down")
        return
    out.print("press Ctrl-C to stop it")
    sys.exit(local_stack.foreground(watcher, out))


@click.command()
def down() -> None:
    """Stop the local stack that `training up` started (and its Redis, if it started one)."""
    local_stack.down(out=console())


@click.command()
@output_option
def status(fmt: str) -> None:
    """The local stack's processes: which run, how often the supervisor started each again, how each last ended."""
    records = StackState().records()
    if not records:
        click.echo("no local stack is running")
        return
    rows = [{"name": r.name, "pid": r.pid, "running": r.alive(), "restarts": r.restarts, "lastExit": r.last_exit,
             "startedAt": r.started_at} for r in records]
    if fmt != "table":
        dump({"services": rows}, fmt)
        return
    console().print(list_table(["SERVICE", "PID", "RUNNING", "RESTARTS", "LAST ENDED", "UP FOR"], [[
        row["name"], row["pid"], "yes" if row["running"] else "no", row["restarts"],
        reasons.how_it_ended(row["lastExit"]) if row["lastExit"] is not None else "-",
        duration(time.time() - row["startedAt"]) if row["running"] else "-"] for row in rows]))


@click.command()
@click.option("--port", type=click.IntRange(1, 65535), default=8600, show_default=True,
              help="The API's port if the stack has to be started.")
def quickstart(port: int) -> None:
    """Bring the stack up, fine-tune the built-in tiny model on the sample data, download the adapter."""
    out = console()
    stack, _ = local_stack.up(port=port, out=out)
    out.print(("the local stack is already up" if stack.already_up else "[green]started the local stack[/]")
              + f" at {stack.api_url}")
    client = ApiClient(stack.api_url, stack.token)

    models = [m.get("id") for m in items_of(client.get("/v1/base-models"))]
    if QUICKSTART_MODEL not in models:
        raise CliError(f"the catalog has no {QUICKSTART_MODEL} (it has: {', '.join(map(str, models)) or 'nothing'})")
    out.print(f"base model: {QUICKSTART_MODEL}")

    with importlib.resources.as_file(importlib.resources.files("shared") / "data" / "sample_sft.jsonl") as sample:
        if not Path(sample).exists():
            raise CliError(f"the bundled sample dataset is missing ({sample})")
        dataset = client.upload("/v1/datasets", Path(sample), {"name": "sample_sft"})
    out.print(f"dataset: {dataset['id']} ({dataset.get('rows', '?')} rows, {dataset.get('format', '?')})")

    run = client.post("/v1/runs", {**QUICKSTART_PLAN, "dataset": dataset["id"]})
    out.print(f"run: {run['id']} (engine {run.get('engine', '?')})")
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
        raise CliError(f"run {run['id']} succeeded but lists no snapshot")
    adapter_dir = download_adapter(client, snapshot, training_home() / "adapters" / run["id"])
    out.print(f"  final snapshot: {snapshot}")
    out.print(f"  adapter (PEFT format): {adapter_dir}")
    out.print("")
    out.print(f"the local stack is still up for the next commands (training runs get {run['id']}, "
              "training snapshots get); `training down` stops it")
    model = (run.get("plan") or {}).get("model")
    out.print(f"serve the adapter: training endpoints create --model {model} --snapshot {snapshot} --name quickstart")


def _elapsed(start: str, end: str) -> str:
    from datetime import datetime

    try:
        delta = datetime.fromisoformat(end.replace("Z", "+00:00")) - datetime.fromisoformat(start.replace("Z", "+00:00"))
    except ValueError:
        return "-"
    return duration(delta.total_seconds())
