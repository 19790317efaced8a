"""List tables as kubectl prints them: borderless columns, one line per row, never wrapped.

In a terminal (or with COLUMNS set) a list fits its width: a column marked `cut` (a name, a model)
is first shortened to CUT_TO characters with `…`, then columns are left out from the least needed
up (each renderer lists its columns most needed first; ID and NAME always stay), then the cut
columns take back what is left, or give up more, down to MIN_CUT. Widths are terminal cells (a
CJK character takes two). Ids are shown short (`run-40c3a1b2`, the
kind and the first SHORT_ID_HEX hex digits: a prefix the CLI takes back wherever it takes an id,
training_cli/short_ids.py). `-o wide` shows every column and every id whole, at whatever width
that takes. A pipe (no terminal, no COLUMNS) gets every column but the wide-only ones, ids whole,
nothing cut: what a script reads does not change with the terminal it ran in.
"""

from __future__ import annotations

import os
import re
from contextvars import ContextVar
from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size

SHORT_ID_HEX = 8
FULL_ID = re.compile(r"\b(run|snap|eval|ep|ds|cmp)-([0-9a-f]{20})\b")
GAP = "   "  # between columns, as kubectl
ELLIPSIS = "…"
MIN_CUT = 6  # a cut column keeps at least this many characters
CUT_TO = 24  # what a cut column is shortened to before any column is left out

# Whether the command prints `-o wide` (set by output.emit around a renderer).
WIDE: ContextVar[bool] = ContextVar("wide", default=False)


@dataclass(frozen=True)
class Col:
    """A list column. `wide`: only with -o wide. `cut`: may be shortened with … to fit.
    `keep`: never left out (an ID or a NAME: what the next command is typed with)."""
    header: str
    wide: bool = False
    cut: bool = False
    keep: bool = False


def as_col(column: Col | str) -> Col:
    if isinstance(column, Col):
        return column
    return Col(column, keep=column in ("ID", "Name", "Pool", "Node", "#"))


def short_ids(value: str, fitted: bool = True) -> str:
    """`value` with every full resource id in it shortened, where a line is fitted to a width (a
    terminal, or COLUMNS): a pipe and -o wide keep ids whole."""
    if WIDE.get() or not fitted:
        return value
    return FULL_ID.sub(lambda m: f"{m.group(1)}-{m.group(2)[:SHORT_ID_HEX]}", value)


def width_limit(console_width: int, is_terminal: bool) -> int | None:
    """The width a list must fit: the terminal's, else COLUMNS when set, else none (a pipe)."""
    if WIDE.get():
        return None
    if is_terminal:
        return console_width
    raw = os.environ.get("COLUMNS", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else None


def render(columns: list[Col | str], rows: list[list[str]], limit: int | None) -> list[str]:
    """The table's lines: a header line, then one line per row, each at most `limit` wide."""
    cols = [as_col(c) for c in columns]
    limit = None if WIDE.get() else limit
    shown = [i for i, c in enumerate(cols) if WIDE.get() or not c.wide]
    cells = [[short_ids(row[i], limit is not None).replace("\n", " ") for i in range(len(cols))] for row in rows]
    widths = {i: max([cell_len(cols[i].header)] + [cell_len(row[i]) for row in cells]) for i in shown}
    natural = dict(widths)

    def total(indices: list[int]) -> int:
        return sum(widths[i] for i in indices) + len(GAP) * (len(indices) - 1)

    def cut_to(floor: int) -> None:
        """Shorten the columns that may be cut, the widest first, none below `floor`."""
        while total(shown) > limit:
            cuttable = [i for i in shown if cols[i].cut and widths[i] > floor]
            if not cuttable:
                return
            widest = max(cuttable, key=lambda i: widths[i])
            widths[widest] = max(floor, widths[widest] - (total(shown) - limit))

    if limit is not None:
        cut_to(CUT_TO)  # a long name gives way before a column of numbers does
        # leave out the last columns that may go until the rest fits
        for i in reversed(list(shown)):
            if total(shown) <= limit:
                break
            if not cols[i].keep and len(shown) > 1:
                shown.remove(i)
        for i in shown:  # what the columns left out gave back goes to the cut ones, up to their whole width
            if cols[i].cut and total(shown) < limit:
                widths[i] = min(natural[i], widths[i] + limit - total(shown))
        cut_to(MIN_CUT)

    def line(values: list[str]) -> str:
        parts = [fit(values[i], widths[i]) for i in shown]
        out = GAP.join(parts).rstrip()
        if limit is not None and cell_len(out) > limit:  # nothing left to leave out or cut: it ends at the edge
            out = set_cell_size(out, limit - 1) + ELLIPSIS
        return out

    return [line([c.header for c in cols])] + [line(row) for row in cells]


def fit(value: str, width: int) -> str:
    """`value` in exactly `width` cells: padded, or cut with `…`."""
    if cell_len(value) <= width:
        return set_cell_size(value, width)
    return set_cell_size(value, width - 1) + ELLIPSIS
