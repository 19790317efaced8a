"""Options shared by the list verbs: `--status`, `--workload`, `--limit`, `--after`, `--run`, and
`--name` / `--tag` where the resources have names and tags; and `list`, the same command as `get`
with no id, as kubectl users type it."""

from __future__ import annotations

from typing import Any, Callable

import click

from training_cli import short_ids as ids


def list_options(*, status: bool = True, run: str | None = None,
                 labels: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`run`: what the list holds, when it also filters with `--run RUN_ID` (?run=). `labels`: the
    resources have names and tags (?name=, ?tag=)."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        if labels:
            fn = click.option("--tag", "tags", multiple=True,
                              help="Only those carrying this tag (repeatable: every one).")(fn)
            fn = click.option("--name", "name", help="Only those whose name holds this text (any case).")(fn)
        fn = click.option("--after", help="Cursor of the next page (a list's nextCursor).")(fn)
        fn = click.option("--limit", type=click.IntRange(1, 200), help="Most items to show (1-200).")(fn)
        fn = click.option("--workload", help="Only this workload.")(fn)
        if status:
            fn = click.option("--status", help="Only this status (e.g. RUNNING).")(fn)
        if run:
            fn = click.option("--run", "run_id", type=ids.RUN, help=f"Only {run} of this run.")(fn)
        return fn

    return decorate


def list_params(**filters: Any) -> dict[str, Any]:
    names = {"run_id": "run", "tags": "tag"}
    params = {names.get(k, k): (list(v) if isinstance(v, tuple) else v) for k, v in filters.items()
              if v is not None and v != ()}
    if "status" in params:
        params["status"] = str(params["status"]).upper()
    return params


def add_list_alias(group: click.Group) -> None:
    """`GROUP list [flags]`: `GROUP get` with no id (kubectl users type `list`)."""
    get = group.commands["get"]
    params = [p for p in get.params if not (isinstance(p, click.Argument) and p.name.endswith("_id"))
              and not (isinstance(p, click.Argument) and p.name in ("model", "pool"))]

    def callback(**kwargs: Any) -> Any:
        context = click.get_current_context()
        id_names = [p.name for p in get.params if isinstance(p, click.Argument)]
        return context.invoke(get, **{name: None for name in id_names}, **kwargs)

    group.add_command(click.Command("list", callback=callback, params=params,
                                    help=f"The list `{group.name} get` shows without an id (the same flags).",
                                    short_help=f"List {group.name} (as get with no id)."))


def say_or_emit(doc: dict[str, Any], fmt: str, sentence: str, table: Callable[[dict[str, Any]], Any]) -> None:
    """What a command that changes a resource prints: one sentence by default, the resource with -o."""
    from training_cli.output import TABLES, emit

    if fmt in TABLES:
        click.echo(sentence)
    else:
        emit(doc, fmt, table)
