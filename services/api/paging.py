"""List paging and filters shared by every list view: ?limit, ?after, ?status, ?workload; and the
?after=N paging of the append-only event and metric logs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Callable

from flask import request

from services.api.auth import principal
from shared import reasons
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


def visible_cursor() -> Callable[[dict[str, Any]], bool]:
    """What `?after=` may name: a document of the token's own workloads (another's is unknown)."""
    who = principal()
    return lambda doc: who.may_use(doc.get("workload", ""))


def visible_filter(extra: Callable[[dict[str, Any]], bool] = lambda d: True, *, what: str,
                   statuses: Iterable[str] | None = None) -> Callable[[dict[str, Any]], bool]:
    """The documents of a list this token may see, narrowed by ?status= (a comma list of
    `statuses`, the states of `what`: 400 for any other) and ?workload=."""
    who = principal()
    status = request.args.get("status")
    wanted = states_in(status, what=what, known=statuses) if status else None
    workload = request.args.get("workload")

    def where(doc: dict[str, Any]) -> bool:
        return (
            who.may_use(doc.get("workload", ""))
            and (wanted is None or doc.get("status", doc.get("phase")) in wanted)  # endpoints: phase
            and (workload is None or doc.get("workload") == workload)
            and extra(doc)
        )

    return where


def states_in(raw: str, *, what: str, known: Iterable[str] | None) -> set[str]:
    """The states a comma list names, each one of `known` (the states of `what`): 400 otherwise."""
    if known is None:
        raise ValidationFailed(reasons.list_has_no_status(what), details={"field": "status"})
    known = [str(k) for k in known]
    wanted = {s.strip().upper() for s in raw.split(",") if s.strip()}
    unknown = sorted(wanted - set(known))
    if unknown or not wanted:
        raise ValidationFailed(reasons.status_unknown(what, unknown[0] if unknown else raw, known),
                               details={"field": "status", "statuses": known})
    return wanted


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
