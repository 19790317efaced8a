"""A plan field as a command-line flag: its help text, type, bounds and choices, read from the field's
one declaration in the schema (schema.py), so the CLI restates none of them (training_cli/commands/runs.py
builds its `runs create` and `runs branch` flags from these).

Plain data, no click: shared/ does not depend on the CLI's library.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from marshmallow import fields, validate

from shared.plans.schema import PlanSchema


@dataclass(frozen=True)
class FlagSpec:
    """What a flag for the plan field at `path` takes."""

    path: tuple[str, ...]
    help: str  # the field's description
    kind: type  # int, float or str
    choices: tuple[str, ...] | None = None  # the only values it takes
    minimum: float | None = None
    maximum: float | None = None
    min_open: bool = False  # the minimum itself is refused
    max_open: bool = False


def flag_spec(*path: str) -> FlagSpec:
    """The flag of the field at `path` (`flag_spec("hyperparameters", "batchSize")`); KeyError naming
    a path that is no plain field of the schema."""
    schema, field_ = PlanSchema(), None
    for depth, name in enumerate(path):
        if schema is None or name not in schema.fields:
            raise KeyError(".".join(path[: depth + 1]))
        field_ = schema.fields[name]
        schema = field_.schema if isinstance(field_, fields.Nested) else None
    if field_ is None or schema is not None:
        raise KeyError(".".join(path))
    kind = int if isinstance(field_, fields.Integer) else float if isinstance(field_, fields.Float) else str
    spec = FlagSpec(path=tuple(path), help=field_.metadata.get("description", ""), kind=kind)
    for rule in field_.validators:
        if isinstance(rule, validate.OneOf):
            spec = replace(spec, choices=tuple(rule.choices))
        elif isinstance(rule, validate.Range):
            spec = replace(spec, minimum=rule.min, maximum=rule.max, min_open=not rule.min_inclusive,
                           max_open=not rule.max_inclusive)
    return spec
