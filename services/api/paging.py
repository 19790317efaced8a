"""List paging and filters shared by every list view: ?limit, ?after, ?status, ?workload; and the
?after=N paging of the append-only event and metric logs."""

from __future__ import annotations

from typing import Any, Callable

from flask import request

from services.api.auth import principal
from shared.errors import ValidationFailed


def page_args() -> tuple[int, str | None]:
    raw = request.args.get("limit", "50")
    try:
        limit = int(raw)
    except ValueError:
        raise ValidationFailed(f"limit must be a whole number from 1 to 200, not {raw!r}",
                               details={"field": "limit"}) from None
    if not 1 <= limit <= 200:
        raise ValidationFailed(f"limit must be a whole number from 1 to 200, not {limit}",
                               details={"field": "limit"})
    return limit, request.args.get("after") or None


def visible_filter(extra: Callable[[dict[str, Any]], bool] = lambda d: True) -> Callable[[dict[str, Any]], bool]:
    who = principal()
    status = request.args.get("status")
    statuses = {s.strip().upper() for s in status.split(",")} if status else None
    workload = request.args.get("workload")

    def where(doc: dict[str, Any]) -> bool:
        return (
            who.may_use(doc.get("workload", ""))
            and (statuses is None or doc.get("status", doc.get("phase")) in statuses)  # endpoints: phase
            and (workload is None or doc.get("workload") == workload)
            and extra(doc)
        )

    return where


def page(items: list[dict[str, Any]], cursor: str | None) -> dict[str, Any]:
    return {"items": items, "nextCursor": cursor}


def log_page(read: Callable[[int], list[dict[str, Any]]]) -> dict[str, Any]:
    """One page of an append-only log (events, metrics) from ?after=N (the index to start at):
    `{items, next}`, where `next` is the index to ask for next time."""
    raw = request.args.get("after", "0")
    if not raw.isdigit():
        raise ValidationFailed(f"after must be a whole number, not {raw!r}", details={"field": "after"})
    start = int(raw)
    items = read(start)
    return {"items": items, "next": start + len(items)}
