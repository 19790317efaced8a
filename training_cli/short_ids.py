"""Short ids as input: wherever a command takes an id, it takes a prefix of one too (`run-40c3a1b2`,
as the tables show ids: training_cli/columns.py), as git and docker do.

A value of the shape `KIND-` and 1 to 19 hex digits (a full id has 20) is looked up with the list's
`?idPrefix=` (GET /v1/runs?idPrefix=run-40c3a1b2&limit=2), so only among the ids the caller's token
may see: another workload's ids are as unknown as ids that do not exist. One match is used; two are
an error that says to type more of the id; none leaves the value as it was typed, for the API to
answer that it does not exist. Anything else (a full id, an endpoint's name) is passed on unchanged.
"""

from __future__ import annotations

import re
from typing import Any

import click

from shared import reasons
from training_cli.client import ApiClient
from training_cli.errors import CliError

FULL_HEX = 20  # shared/ids.new_id: 10 random bytes as hex
# kind prefix -> (the list that holds it, what it is called)
LISTS = {"run": ("/v1/runs", "run"), "snap": ("/v1/snapshots", "snapshot"), "eval": ("/v1/evaluations", "evaluation"),
         "ep": ("/v1/endpoints", "endpoint"), "ds": ("/v1/datasets", "dataset"), "cmp": ("/v1/comparisons", "comparison")}


def is_short(kind: str, value: str) -> bool:
    return re.fullmatch(f"{re.escape(kind)}-[0-9a-f]{{1,{FULL_HEX - 1}}}", value) is not None


def resolve(client: ApiClient, kind: str, value: str) -> str:
    """The full id `value` is a prefix of, among the caller's (see the module's docstring)."""
    if not is_short(kind, value):
        return value
    path, what = LISTS[kind]
    page = client.get(path, {"idPrefix": value, "limit": 2})
    # an API that does not know ?idPrefix= answers the whole list: only ids that start with it count
    found = [item["id"] for item in page.get("items") or [] if str(item.get("id", "")).startswith(value)]
    if len(found) > 1:
        raise CliError(reasons.short_id_ambiguous(what, value, found))
    return found[0] if found else value


class ResourceId(click.ParamType):
    """A command's id argument or option: a full id, or a prefix of one (resolved here)."""

    name = "id"

    def __init__(self, kind: str):
        self.kind = kind

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str) or ctx is None or not is_short(self.kind, value):
            return value
        from training_cli.context import CliContext

        return resolve(ctx.ensure_object(CliContext).client, self.kind, value)


RUN, SNAPSHOT, EVALUATION = ResourceId("run"), ResourceId("snap"), ResourceId("eval")
ENDPOINT, DATASET, COMPARISON = ResourceId("ep"), ResourceId("ds"), ResourceId("cmp")
