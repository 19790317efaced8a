"""The rules for the names and ids a user passes: one rule each, shared by the deployment config,
the request bodies (shared/plans/ and the other schemas) and the query parameters of the API.

A value that breaks its rule is refused (400 naming where it was) rather than looked up: a filter
such as `?workload=../../x` names nothing that could exist, and answering it with an empty list
would hide the slip.
"""

from __future__ import annotations

import re

# A workload: what a token may act for (tokens[].workloads), what quotas count (pools.*.quotas),
# what a run, evaluation or endpoint counts against (its `workload`).
WORKLOAD_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"
# A resource id: its kind's prefix (shared/store/ids.py), a dash, then what new_id writes (hex) or, for
# ids made elsewhere (tests, imports of older stores), letters, digits, `_` and `-`; never `/`.
ID_BODY_PATTERN = r"[A-Za-z0-9_-]{1,64}"
# The name of a file as a client names its upload (?name= of a snapshot import): one path segment.
FILE_NAME_MAX = 255
_FILE_NAME = re.compile(r"[^/\x00-\x1f\x7f]{1,%d}" % FILE_NAME_MAX)


def id_pattern(prefix: str = "[a-z]+") -> str:
    """The pattern of an id of the kind whose prefix is `prefix` (any kind's, by default), as the
    OpenAPI document declares it."""
    return f"^{prefix}-{ID_BODY_PATTERN}$"


def cursor_pattern() -> str:
    """?after= of a list: an id of any kind, or empty (the first page, as no ?after= at all)."""
    return f"^([a-z]+-{ID_BODY_PATTERN})?$"


def is_workload(value: object) -> bool:
    return isinstance(value, str) and re.fullmatch(WORKLOAD_PATTERN, value) is not None


def is_id_of(prefix: str, value: object) -> bool:
    """Whether `value` has the shape of an id of the kind whose prefix is `prefix` ("run", "cmp")."""
    return isinstance(value, str) and re.fullmatch(id_pattern(re.escape(prefix)), value) is not None


def is_file_name(value: object) -> bool:
    return isinstance(value, str) and _FILE_NAME.fullmatch(value) is not None and value not in (".", "..")
