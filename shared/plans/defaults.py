"""Every default a plan gets, by dotted field path, read from the schema's own `load_default`s
(`schema.py`): what the dashboard's plan panel marks as a default (issue 30)."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, missing

from shared.plans.schema import PlanSchema


def _walk(schema: Schema, prefix: str, out: dict[str, Any]) -> None:
    for name, field_ in schema.fields.items():
        path = f"{prefix}{name}"
        if isinstance(field_, fields.Nested):
            _walk(field_.schema, path + ".", out)  # a part left out is filled with its fields' defaults
            continue
        default = field_.load_default
        if default is not missing:
            out[path] = default() if callable(default) else default


def plan_defaults() -> dict[str, Any]:
    """{"hyperparameters.learningRate": 0.002, "precision": "fp32", ...}: each field's default;
    a field without one (`model`, `dataset`) is not listed."""
    out: dict[str, Any] = {}
    _walk(PlanSchema(), "", out)
    return out
