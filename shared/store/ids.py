"""Opaque, unguessable resource IDs prefixed by kind (SPEC 2)."""

from __future__ import annotations

import secrets
from enum import StrEnum


class Kind(StrEnum):
    RUN = "run"
    SNAPSHOT = "snap"
    EVALUATION = "eval"
    ENDPOINT = "ep"
    DATASET = "ds"
    COMPARISON = "cmp"
    CLAIM = "claim"


def new_id(kind: Kind) -> str:
    # 80 random bits in lowercase base32-ish hex: short enough to type, impossible to guess.
    return f"{kind.value}-{secrets.token_hex(10)}"


def kind_of(resource_id: str) -> Kind | None:
    prefix, _, rest = resource_id.partition("-")
    if not rest:
        return None
    try:
        return Kind(prefix)
    except ValueError:
        return None
