"""Following a run: the live progress line of `runs watch` / `quickstart`, and `runs logs -f`."""

from __future__ import annotations

import textwrap
import time
from typing import Any, Callable

from rich.console import Group
from rich.live import Live
from rich.text import Text

from shared.lifecycle.states import RunStatus
from training_cli import tables
from training_cli.client import ApiClient, LogCursor
from training_cli.columns import short_ids
from training_cli.curves import WIDTH, RunCurves
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
    """Show a live progress line (status, bar, step/total, loss, reward for grpo, ETA, tokens/s) and
    the loss curve so far (training_cli/curves.py) until the run has ended or is PAUSED, printing its
    events above it; returns the run as last read. The line fits the terminal (progress_lines); what
    the run waits on, or why it ended, is a line of its own below, wrapped between words."""
    out = console()
    events = LogCursor(client, f"/v1/runs/{run_id}/events")
    metrics, curves = LogCursor(client, f"/v1/runs/{run_id}/metrics"), RunCurves()
    with Live(Text(""), console=out, transient=False, auto_refresh=False) as live:
        while True:
            run = client.get(f"/v1/runs/{run_id}")
            if show_events:
                for event in events.fetch():
                    live.console.print(tables.event_line(event))
            curves.add(metrics.fetch())
            live.update(Group(*progress_lines(run, curves, out.width, fitted=out.is_terminal)), refresh=True)
            if has_stopped(run):
                break
            sleep(POLL_S)
    if not out.is_terminal:
        out.line()  # rich leaves a non-terminal's last live line open: what is printed next starts its own
    return run


BAR_MIN, BAR_MAX = 10, 30
CURVE_MIN = 8  # sparkline characters, at the least, for a curve to be drawn at all


def progress_lines(run: dict[str, Any], curves: RunCurves, width: int, *, fitted: bool = True) -> list[Text]:
    """The run's progress as lines no wider than `width`: the fields in the order they matter, each
    left out whole when it does not fit (never cut), the bar between BAR_MIN and BAR_MAX wide."""
    fields = _fields(run)
    done, total = fields["completed"], fields["total"]
    parts = [p for p in (fields["steps"], f"loss {fields['loss']}",
                         f"reward {fields['reward']}" if fields["reward"] else "",
                         f"ETA {fields['eta']}" if fields["eta"] != "-" else "",
                         f"{fields['tps']} tok/s" if fields["tps"] != "-" else "") if p]
    head = f"{fields['status']:<9}"
    used = len(head) + 1 + BAR_MIN
    kept: list[str] = []
    for part in parts:
        if used + 2 + len(part) <= width:
            kept.append(part)
            used += 2 + len(part)
    bar_width = max(0, min(BAR_MAX, BAR_MIN + width - used))
    if width < len(head) + 1 + BAR_MIN:  # not even the bar fits: the status alone
        bar_width, kept = 0, []
    used += bar_width - BAR_MIN
    line = Text(head, style="bold")
    if bar_width:
        line.append(" ")
        line.append_text(_bar(done, total, bar_width))
    for part in kept:
        line.append("  " + part)
    room = width - used - 2
    shown = [c for c in curves.drawn() if c.by_step]
    if shown and room >= (len("reward ") + CURVE_MIN + 2) * len(shown):
        each = min(WIDTH, room // len(shown) - len("reward ") - 2)
        line.append("  " + "  ".join(f"{c.name} {c.line(each)}" for c in shown))
    lines = [line]
    note = short_ids(fields["note"], fitted)
    if note:
        lines += [Text(piece, style="dim") for piece in textwrap.wrap(note, max(20, width - 2), initial_indent="  ",
                                                                       subsequent_indent="  ")]
    return lines


def _bar(done: int, total: int | None, width: int) -> Text:
    filled = 0 if not total else min(width, round(width * done / total))
    bar = Text("━" * filled, style="magenta")
    bar.append("━" * (width - filled), style="grey37")
    return bar


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
        "loss": number(progress.get("loss")),
        "reward": number(progress["reward"]) if progress.get("reward") is not None else "",
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
