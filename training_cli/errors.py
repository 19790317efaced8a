"""The CLI's one error type: shown as `error: MESSAGE` (plus detail lines), exit code 1, no traceback."""

from __future__ import annotations

from typing import Any

import click


class CliError(click.ClickException):
    exit_code = 1

    def __init__(self, message: str, *, details: Any = None):
        super().__init__(message)
        self.details = details

    def show(self, file: Any = None) -> None:  # noqa: ARG002 - always stderr
        click.echo(f"error: {self.message}", err=True)
        for line in detail_lines(self.details):
            click.echo(f"  {line}", err=True)


class ApiError(CliError):
    """A non-2xx answer of the trainer API, carrying its `{"error": {code, message, details}}`."""

    def __init__(self, message: str, *, status: int, code: str = "", details: Any = None):
        super().__init__(message, details=details)
        self.status = status
        self.code = code


def detail_lines(details: Any) -> list[str]:
    """Readable lines for an error's details: each list (a dataset's per-line faults) one item a
    line. Scalar details only repeat what the message names, so they are left to `-o json` users
    of the API; empty details give no lines."""
    if not details:
        return []
    if isinstance(details, list):
        return [_item(d) for d in details]
    if not isinstance(details, dict):
        return [str(details)]
    lines: list[str] = []
    shown = 0
    for key, value in details.items():
        if key == "faultCount":
            continue  # said once below, after the faults
        if key == "fields" and isinstance(value, dict) and len(value) > 1:
            # a request body's every refused field (the message names the first): all of them, one a
            # line, so a plan is fixed in one go (issue 30)
            lines.extend(f"field {name}: {'; '.join(map(str, problems if isinstance(problems, list) else [problems]))}"
                         for name, problems in value.items())
            continue
        if isinstance(value, list):
            lines.extend(_item(v) for v in value)
            shown += len(value)
        # Scalars ({"id": ...}, {"field": ...}) repeat what the message already names: not shown.
    total = details.get("faultCount")
    if isinstance(total, int) and total > shown:
        lines.append(f"... {total} faults in all; the first {shown} are shown")
    return lines


def _item(item: Any) -> str:
    if not isinstance(item, dict):
        return str(item)
    prefix = []
    if item.get("line") is not None:
        prefix.append(f"line {item['line']}")
    if item.get("field") is not None:
        prefix.append(f"field {item['field']}")
    message = item.get("problem") or item.get("message")
    rest = ", ".join(
        f"{k}={v}" for k, v in item.items() if k not in ("line", "field", "problem", "message") and v is not None
    )
    text = ": ".join(p for p in (", ".join(prefix), message or "", rest) if p)
    return text
