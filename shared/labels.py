"""Names and tags of runs, endpoints and datasets (issue 30): what a person finds a resource by.

A **name** is free text for people (`sft-reverse-lr2e-4`), not unique (an endpoint's name, which
requests may use as `model`, keeps its own rules: shared/endpoint_schema.py). A **tag** is a short
token (`team=nlp`, `baseline`, `exp:42`); a resource has at most TAGS_MAX of them. Lists filter by
both: `?name=` keeps the resources whose name holds the text (any case), `?tag=` (repeatable) those
that carry every tag named.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from marshmallow import ValidationError, fields, validate

from shared import reasons

NAME_MAX = 200
TAG_MAX_CHARS = 64
TAGS_MAX = 20
TAG_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:=/+-]{0,63}$"
_TAG = re.compile(TAG_PATTERN)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def is_tag(value: object) -> bool:
    return isinstance(value, str) and _TAG.fullmatch(value) is not None


def is_name(value: object) -> bool:
    return isinstance(value, str) and 1 <= len(value) <= NAME_MAX and not _CONTROL.search(value)


def _check_tag(value: Any) -> Any:
    if not is_tag(value):
        raise ValidationError(reasons.TAG_RULE)
    return value


def _check_name(value: Any) -> Any:
    if not is_name(value):
        raise ValidationError(reasons.name_rule(NAME_MAX))
    return value


def _distinct(values: list[str]) -> list[str]:
    if len(set(values)) != len(values):
        raise ValidationError(reasons.TAGS_REPEATED)
    return values


def name_field(description: str) -> fields.String:
    """A resource's `name` in a create body: optional, one line, at most NAME_MAX characters."""
    return fields.String(load_default=None, allow_none=True, validate=_check_name,
                         metadata={"description": description, "maxLength": NAME_MAX})


def tags_field() -> fields.List:
    """A resource's `tags` in a create body: at most TAGS_MAX distinct tags, each TAG_PATTERN."""
    return fields.List(
        fields.String(validate=_check_tag, metadata={"pattern": TAG_PATTERN}),
        load_default=list, validate=[validate.Length(max=TAGS_MAX, error=reasons.tags_too_many(TAGS_MAX)), _distinct],
        metadata={"description": f"free-form tags to find it by (at most {TAGS_MAX}; letters, digits and "
                                 "_ . : = / + -, up to 64 characters, starting with a letter or digit)"})


def matches(doc: dict[str, Any], *, name: str | None, tags: Iterable[str]) -> bool:
    """Whether `doc` passes `?name=` (its name holds the text, any case) and every `?tag=`."""
    if name is not None and name.casefold() not in str(doc.get("name") or "").casefold():
        return False
    held = set(doc.get("tags") or ())
    return all(tag in held for tag in tags)
