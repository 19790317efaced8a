"""Following a run: the live progress bar of `runs watch` / `quickstart`, and `runs logs -f`."""

from __future__ import annotations

import time
from typing import Any, Callable

from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn

from shared.lifecycle.states import RunStatus
from training_cli import tables
from training_cli.client import ApiClient, LogCursor
from training_cli.curves import RunCurves
from training_cli.output import console, duration, number

POLL_S = 1.0
TERMINAL = {str(s) for s in RunStatus.terminal()}
# Where following a run ends: it has ended, or it is PAUSED (nothing moves until someone resumes it).
STOPPED = TERMINAL | {str(RunStatus.PAUSED)}


def has_stopped(run: dict[str, Any]) -> bool:
    """The run has ended or is PAUSED: watching it longer would show nothing new."""
    return str(run.get("status")) in STOPPED


def watch_run(
    client: ApiClient, run_id: str, *, show_events: bool = True, sleep: Callable[[float], None] = time.sleep
) -> dict[str, Any]:
    """Show a live progress bar (step/total, loss, tokens/s, ETA, status) and beside it the loss
    curve so far (training_cli/curves.py) until the run has ended or is PAUSED, printing its events
    above the bar; returns the run as last read."""
    out = console()
    events = LogCursor(client, f"/v1/runs/{run_id}/events")
    metrics, curves = LogCursor(client, f"/v1/runs/{run_id}/metrics"), RunCurves()
    columns = (
        SpinnerColumn(finished_text="[green]✓"),
        TextColumn("[bold]{task.fields[status]:<9}"),
        BarColumn(bar_width=30),
        TextColumn("{task.fields[steps]}"),
        TextColumn("loss {task.fields[loss]}"),
        TextColumn("{task.fields[tps]} tok/s"),
        TextColumn("ETA {task.fields[eta]}"),
        TextColumn("{task.fields[curve]}"),
        TextColumn("{task.fields[note]}"),
    )
    with Progress(*columns, console=out, transient=False) as bar:
        task = bar.add_task(run_id, total=None, status="", steps="", loss="-", tps="-", eta="-", curve="", note="")
        while True:
            run = client.get(f"/v1/runs/{run_id}")
            if show_events:
                for event in events.fetch():
                    bar.console.print(tables.event_line(event))
            curves.add(metrics.fetch())
            bar.update(task, **_fields(run), curve=curves.text())
            if has_stopped(run):
                return run
            sleep(POLL_S)


def _fields(run: dict[str, Any]) -> dict[str, Any]:
    progress = run.get("progress") or {}
    step, total = progress.get("step") or 0, progress.get("totalSteps")
    status = str(run.get("status"))
    waiting = tables.waiting_text(run.get("scheduling"))
    note = waiting if status == "QUEUED" and waiting else (run.get("detail") or "" if status in TERMINAL else "")
    return {
        "status": status,
        "total": total,
        "completed": step,
        "steps": f"{step}/{total if total is not None else '?'}",
        "loss": number(progress.get("loss")) + (f" reward {number(progress['reward'])}"
                                                 if progress.get("reward") is not None else ""),
        "tps": number(progress.get("tokensPerSecond"), 5),
        "eta": duration(progress.get("etaSeconds")) if status == "RUNNING" else "-",
        "note": note,
    }


def follow_logs(
    client: ApiClient, run_id: str, *, follow: bool, show: Callable[[dict[str, Any]], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any] | None:
    """Print the run's events (`TIME LEVEL MESSAGE`, or each one with `show`); with follow, keep
    printing until it has ended or is PAUSED."""
    if show is None:
        out = console()

        def show(event: dict[str, Any]) -> None:
            out.print(tables.event_line(event))

    events = LogCursor(client, f"/v1/runs/{run_id}/events")
    while True:
        # Read the status before the events so no event written just before the end is missed.
        run = client.get(f"/v1/runs/{run_id}") if follow else None
        while batch := events.fetch():
            for event in batch:
                show(event)
        if not follow or has_stopped(run):
            return run
        sleep(POLL_S)


def last_events(client: ApiClient, run_id: str, count: int = 10) -> list[dict[str, Any]]:
    return client.log_items(f"/v1/runs/{run_id}/events")[-count:]
