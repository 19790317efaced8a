"""`-o table|json|yaml` for every read. json/yaml print the API's JSON as it came; tables come from
one renderer per resource kind (training_cli/tables.py)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Callable

import click
import yaml
from rich.console import Console
from rich.table import Table

FORMATS = ("table", "json", "yaml")

output_option = click.option(
    "-o", "--output", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
    help="How to print the answer.",
)


def console() -> Console:
    # Built per call so the CLI (and CliRunner in tests) always writes to the current stdout.
    out = Console(highlight=False, soft_wrap=False)
    if not out.is_terminal:
        out.width = max(out.width, 200)  # piped or captured: do not squash tables to 80 columns
    return out


def emit(data: Any, fmt: str, table: Callable[[Any], Any]) -> None:
    """Print `data` as json, yaml, or with `table(data)`: a rich renderable or a list of them."""
    if fmt != "table":
        dump(data, fmt)
    else:
        out = console()
        rendered = table(data)
        for part in rendered if isinstance(rendered, list) else [rendered]:
            out.print(part)


def dump(data: Any, fmt: str) -> None:
    """Print `data` as one json or yaml document."""
    if fmt == "json":
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), nl=False)


def emit_list(page: Any, fmt: str, table: Callable[[Any], Any], noun: str = "items") -> None:
    """Like emit, for a paged list: a table also says how to read the next page."""
    if fmt == "table" and not items_of(page):
        click.echo(f"no {noun} found")
        return
    emit(page, fmt, table)
    if fmt == "table" and isinstance(page, dict) and page.get("nextCursor"):
        click.echo(f"more: add --after {page['nextCursor']}", err=True)


def list_table(columns: list[str], rows: list[list[Any]], *, title: str | None = None) -> Table:
    table = Table(title=title, title_justify="left", header_style="bold")
    cells = [[text(v) for v in row] for row in rows]
    for i, name in enumerate(columns):
        if name == "ID":  # ids are copied into the next command: never wrapped or cut
            width = max([len(name)] + [len(row[i]) for row in cells])
            table.add_column(name, no_wrap=True, min_width=width)
        else:
            table.add_column(name, overflow="fold")
    for row in cells:
        table.add_row(*row)
    return table


def fields_table(pairs: list[tuple[str, Any]], *, title: str | None = None) -> Table:
    """A two-column table of one resource's fields."""
    table = Table(title=title, title_justify="left", show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for name, value in pairs:
        table.add_row(name, text(value))
    return table


def text(value: Any) -> str:
    if value is None or value == "" or value == []:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(text(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in value.items())
    return str(value)


def number(value: Any, digits: int = 4) -> str:
    if value is None:
        return "-"
    try:
        return f"{float(value):.{digits}g}"
    except (TypeError, ValueError):
        return str(value)


def duration(seconds: Any) -> str:
    """45s, 42m05s, 1h05m: ETAs and idle times."""
    if seconds is None:
        return "-"
    seconds = int(round(float(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"


def when(stamp: Any) -> str:
    """An ISO time as local `YYYY-MM-DD HH:MM:SS`; anything unparsable as it came."""
    if not stamp:
        return "-"
    try:
        moment = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return str(stamp)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def items_of(page: Any) -> list[dict[str, Any]]:
    """The items of a list answer, whether paged ({items, nextCursor}) or a bare list."""
    if isinstance(page, list):
        return page
    return list((page or {}).get("items") or [])
