"""Options shared by the list verbs: `--status`, `--workload`, `--limit`, `--after`, `--run`."""

from __future__ import annotations

from typing import Any, Callable

import click


def list_options(*, status: bool = True, run: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`run`: what the list holds, when it also filters with `--run RUN_ID` (?run=)."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn = click.option("--after", help="Cursor of the next page (a list's nextCursor).")(fn)
        fn = click.option("--limit", type=click.IntRange(1, 200), help="Most items to show (1-200).")(fn)
        fn = click.option("--workload", help="Only this workload.")(fn)
        if status:
            fn = click.option("--status", help="Only this status (e.g. RUNNING).")(fn)
        if run:
            fn = click.option("--run", "run_id", help=f"Only {run} of this run.")(fn)
        return fn

    return decorate


def list_params(**filters: Any) -> dict[str, Any]:
    names = {"run_id": "run"}
    params = {names.get(k, k): v for k, v in filters.items() if v is not None}
    if "status" in params:
        params["status"] = str(params["status"]).upper()
    return params


def say_or_emit(doc: dict[str, Any], fmt: str, sentence: str, table: Callable[[dict[str, Any]], Any]) -> None:
    """What a command that changes a resource prints: one sentence by default, the resource with -o."""
    from training_cli.output import TABLES, emit

    if fmt in TABLES:
        click.echo(sentence)
    else:
        emit(doc, fmt, table)
