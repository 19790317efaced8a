"""Names and tags of runs, endpoints and datasets (shared/labels.py), and finding a resource by a
short id (the CLI's prefix of an id)."""

from __future__ import annotations

TAG_RULE = ("a tag is 1 to 64 letters, digits or `_.:=/+-`, starting with a letter or digit "
            "(for example team=nlp or baseline)")
TAGS_REPEATED = "names a tag twice"


def name_rule(most: int) -> str:
    return f"a name is 1 to {most} characters on one line (no control characters)"


def tags_too_many(most: int) -> str:
    return f"at most {most} tags"


def form_field_refused(field: str, problem: str) -> str:
    return f"the form's field {field} is refused: {problem}"


def query_tag_invalid(raw: str) -> str:
    return f"?tag={raw!r} names no tag a resource could carry: {TAG_RULE}"


def query_name_invalid(most: int) -> str:
    return f"?name= must be 1 to {most} characters on one line (no control characters)"


def query_id_prefix_invalid(what: str, prefix: str) -> str:
    return (f"?idPrefix= must be the start of a {what} id: `{prefix}-` and at least one more letter or digit "
            f"(for example {prefix}-40c3)")


def short_id_ambiguous(what: str, prefix: str, matches: list[str]) -> str:
    """The CLI's short id (training_cli/short_ids.py) that starts more than one id."""
    return f"{prefix} is the start of more than one {what} id ({', '.join(matches)}, ...): type more of it"
