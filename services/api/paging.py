"""List paging and filters shared by every list view: ?limit, ?after, ?status, ?workload; the
?after=N paging of the append-only event and metric logs; bounded whole numbers (?step=)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Callable

from flask import request

from services.api.auth import principal
from shared import reasons
from shared.errors import ValidationFailed
from shared.schemas import labels
from shared.schemas.names import is_id_of, is_workload
from shared.store.ids import Kind

# ?after=N of an event or metric log: Redis holds at most 2^32 - 1 entries in a list, and reads an
# index past 2^63 as no number at all.
MAX_LOG_INDEX = 2**32 - 1
_WHOLE_NUMBER = re.compile(r"[0-9]{1,10}")  # ASCII digits only: str.isdigit takes "²", which int() refuses


def page_args(kind: Kind) -> tuple[int, str | None]:
    """?limit and ?after (the nextCursor of the page before: an id of the list's `kind`)."""
    raw = request.args.get("limit", "50")
    try:
        limit = int(raw)
    except ValueError:
        raise ValidationFailed(reasons.page_limit_invalid(repr(raw), 200),
                               details={"field": "limit"}) from None
    if not 1 <= limit <= 200:
        raise ValidationFailed(reasons.page_limit_invalid(str(limit), 200),
                               details={"field": "limit"})
    after = request.args.get("after") or None  # an empty ?after= is the first page, as no ?after= is
    return limit, checked_id("after", after, kind)


# What a resource of each kind is called in a sentence
KIND_WORDS = {Kind.RUN: "run", Kind.SNAPSHOT: "snapshot", Kind.EVALUATION: "evaluation", Kind.ENDPOINT: "endpoint",
              Kind.DATASET: "dataset", Kind.COMPARISON: "comparison"}


def checked_id(param: str, raw: str | None, kind: Kind) -> str | None:
    """The value `raw` of the query parameter `param`, which names a resource of `kind` by id
    (?run=, ?comparison=, ?after=): None when absent, else 400 naming the parameter unless it has
    the shape of such an id (shared/schemas/names.py); an empty one is a filter naming nothing, refused too."""
    if raw is not None and not is_id_of(kind.value, raw):
        raise ValidationFailed(reasons.query_id_invalid(param, KIND_WORDS[kind], kind.value), details={"field": param})
    return raw


def checked_workload(param: str, raw: str | None) -> str | None:
    """The value `raw` of the query parameter `param`, which names a workload: None when absent,
    else 400 unless it is a workload's name (the rule the deployment config holds workloads to,
    shared/schemas/names.py)."""
    if raw is not None and not is_workload(raw):
        raise ValidationFailed(reasons.query_workload_invalid(param), details={"field": param})
    return raw


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
    wanted = states_in(status, what=what, known=statuses) if status is not None else None
    workload = checked_workload("workload", request.args.get("workload"))

    def where(doc: dict[str, Any]) -> bool:
        return (
            who.may_use(doc.get("workload", ""))
            and (wanted is None or doc.get("status", doc.get("phase")) in wanted)  # endpoints: phase
            and (workload is None or doc.get("workload") == workload)
            and extra(doc)
        )

    return where


def label_filter() -> Callable[[dict[str, Any]], bool]:
    """?name= (the name holds the text, any case) and ?tag= (repeatable: every tag named) of a list
    of resources that have names and tags (runs, endpoints, datasets: shared/schemas/labels.py)."""
    name = request.args.get("name")
    if name is not None and not labels.is_name(name):
        raise ValidationFailed(reasons.query_name_invalid(labels.NAME_MAX), details={"field": "name"})
    tags = request.args.getlist("tag")
    for tag in tags:
        if not labels.is_tag(tag):
            raise ValidationFailed(reasons.query_tag_invalid(tag), details={"field": "tag"})
    return lambda doc: labels.matches(doc, name=name, tags=tags)


def id_prefix_filter(kind: Kind) -> Callable[[dict[str, Any]], bool]:
    """?idPrefix=: the resources whose id starts with it (how the CLI finds the one a short id
    names, training_cli/short_ids.py); it must be `KIND-` and at least one more character."""
    prefix = request.args.get("idPrefix")
    if prefix is None:
        return lambda doc: True
    if not re.fullmatch(f"{kind.value}-[A-Za-z0-9_-]{{1,64}}", prefix):
        raise ValidationFailed(reasons.query_id_prefix_invalid(KIND_WORDS[kind], kind.value),
                               details={"field": "idPrefix"})
    return lambda doc: str(doc.get("id", "")).startswith(prefix)


def both(*filters: Callable[[dict[str, Any]], bool]) -> Callable[[dict[str, Any]], bool]:
    return lambda doc: all(f(doc) for f in filters)


def states_in(raw: str, *, what: str, known: Iterable[str] | None, param: str = "status") -> set[str]:
    """The states a comma list names (the query parameter `param`), each one of `known` (the states
    of `what`): 400 otherwise, for an empty list too (an empty filter is a slip, not "any state")."""
    if known is None:
        raise ValidationFailed(reasons.list_has_no_status(what), details={"field": param})
    known = [str(k) for k in known]
    wanted = {s.strip().upper() for s in raw.split(",") if s.strip()}
    if not wanted:
        raise ValidationFailed(reasons.status_empty(what, known, param=param),
                               details={"field": param, "statuses": known})
    unknown = sorted(wanted - set(known))
    if unknown:
        raise ValidationFailed(reasons.status_unknown(what, unknown[0], known),
                               details={"field": param, "statuses": known})
    return wanted


def whole_number_arg(param: str, raw: str | None, *, low: int, high: int, default: int | None = None) -> int | None:
    """The value `raw` of the query parameter `param` as a whole number from `low` to `high`
    (?step=, a step cursor): `default` when absent, else 400 naming it unless it is one."""
    if raw is None:
        return default
    if not _WHOLE_NUMBER.fullmatch(raw) or not low <= int(raw) <= high:
        raise ValidationFailed(reasons.query_whole_number_invalid(param, low, high, raw),
                               details={"field": param, "minimum": low, "maximum": high})
    return int(raw)


def page(items: list[dict[str, Any]], cursor: str | None) -> dict[str, Any]:
    return {"items": items, "nextCursor": cursor}


def log_page(read: Callable[[int], list[dict[str, Any]]]) -> dict[str, Any]:
    """One page of an append-only log (events, metrics) from ?after=N (the index to start at):
    `{items, next}`, where `next` is the index to ask for next time."""
    raw = request.args.get("after", "0")
    if not _WHOLE_NUMBER.fullmatch(raw) or int(raw) > MAX_LOG_INDEX:
        raise ValidationFailed(reasons.log_after_invalid(raw, MAX_LOG_INDEX),
                               details={"field": "after", "maximum": MAX_LOG_INDEX})
    start = int(raw)
    items = read(start)
    return {"items": items, "next": start + len(items)}
