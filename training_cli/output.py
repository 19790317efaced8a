"""`-o table|wide|json|yaml` for every read. json/yaml print the API's JSON as it came; tables come
from one renderer per resource kind (training_cli/tables.py); lists are fitted to the terminal by
training_cli/columns.py, and `wide` is the table with every column and every id whole."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from typing import Any, Callable

import click
import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from training_cli.columns import WIDE, Col, render, width_limit

FORMATS = ("table", "wide", "json", "yaml")
TABLES = ("table", "wide")

output_option = click.option(
    "-o", "--output", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
    help="How to print the answer (wide: a table with every column and full ids).",
)


def console() -> Console:
    # Built per call so the CLI (and CliRunner in tests) always writes to the current stdout.
    out = Console(highlight=False, soft_wrap=False)
    if not out.is_terminal and not os.environ.get("COLUMNS", "").isdigit():
        out.width = max(out.width, 200)  # piped or captured: do not squash tables to 80 columns
    return out


def emit(data: Any, fmt: str, table: Callable[[Any], Any]) -> None:
    """Print `data` as json, yaml, or with `table(data)`: a ListTable, a rich renderable or a list
    of them (-o table and -o wide)."""
    if fmt not in TABLES:
        dump(data, fmt)
        return
    token = WIDE.set(fmt == "wide")
    try:
        out = console()
        rendered = table(data)
        for part in rendered if isinstance(rendered, list) else [rendered]:
            if isinstance(part, ListTable):
                click.echo(part.text(width_limit(out.width, out.is_terminal)))
            else:
                out.print(part)
    finally:
        WIDE.reset(token)


def dump(data: Any, fmt: str) -> None:
    """Print `data` as one json or yaml document."""
    if fmt == "json":
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), nl=False)


def emit_list(page: Any, fmt: str, table: Callable[[Any], Any], noun: str = "items") -> None:
    """Like emit, for a paged list: a table also says how to read the next page."""
    if fmt in TABLES and not items_of(page):
        click.echo(f"no {noun} found")
        return
    emit(page, fmt, table)
    if fmt in TABLES and isinstance(page, dict) and page.get("nextCursor"):
        click.echo(f"more: add --after {page['nextCursor']}", err=True)


class ListTable:
    """A list as borderless columns, one line per row (training_cli/columns.py fits it)."""

    def __init__(self, columns: list[Col | str], rows: list[list[Any]], title: str | None = None):
        self.columns, self.title = columns, title
        self.rows = [[text(v) for v in row] for row in rows]

    def lines(self, limit: int | None) -> list[str]:
        head = [self.title + ":"] if self.title else []
        return head + render(self.columns, self.rows, limit)

    def text(self, limit: int | None) -> str:
        return "\n".join(self.lines(limit))

    def __rich_console__(self, console: Console, options: Any) -> Any:  # printed by a rich Console
        for line in self.lines(width_limit(options.max_width, console.is_terminal)):
            yield Text(line, no_wrap=True, overflow="ignore")


def list_table(columns: list[Col | str], rows: list[list[Any]], *, title: str | None = None) -> ListTable:
    return ListTable(columns, rows, title)


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


def age(stamp: Any, now: datetime | None = None) -> str:
    """How long ago an ISO time was, as kubectl's AGE column: 45s, 42m, 5h, 3d."""
    try:
        moment = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return "-"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    seconds = max(0, int(((now or datetime.now(timezone.utc)) - moment).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def items_of(page: Any) -> list[dict[str, Any]]:
    """The items of a list answer, whether paged ({items, nextCursor}) or a bare list."""
    if isinstance(page, list):
        return page
    return list((page or {}).get("items") or [])
