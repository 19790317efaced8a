"""The body of POST /v1/endpoints (SPEC 7): one schema, with its help text."""

from __future__ import annotations

from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate

from shared import labels, reasons
from shared.errors import ValidationFailed
from shared.plans import MAX_GPUS, WORKLOAD_PATTERN, FullMatch, _flatten, count

DEFAULT_IDLE_TIMEOUT_S = 3600
DEFAULT_START_TIMEOUT_S = 600
# Longer than any endpoint is left alone, and short enough that every time derived from it
# (stopsAt, the idle and start deadlines) is a date a datetime holds.
MAX_TIMEOUT_S = 30 * 24 * 3600

# A name stands where an id may (`model` of a proxied request, the endpoint routes), so it may not
# look like one: shared/endpoint_names.find_endpoint reads "ep-..." as an id. Nor may it be `.` or
# `..`, which a URL path (GET /v1/endpoints/NAME) reads as a step up.
NAME_PATTERN = r"^(?!ep-)(?!\.\.?$)[A-Za-z0-9_.:-]{1,64}$"
NAME_RULE = "1 to 64 letters, digits or `_.:-`, not starting with `ep-` (the ids' prefix)"


class EndpointCreateSchema(Schema):
    class Meta:
        unknown = RAISE

    model = fields.String(required=True, metadata={"description": "base-model id from the catalog"})
    snapshot = fields.String(load_default=None, allow_none=True,
                             metadata={"description": "serve this snapshot's adapter over the model"})
    name = fields.String(load_default=None, allow_none=True,
                         validate=[validate.NoneOf((".", ".."), error=reasons.ENDPOINT_NAME_DOTS),
                                   FullMatch(NAME_PATTERN, error=NAME_RULE)],
                         metadata={"description": "a name requests may use as `model` instead of the id, "
                                                  "and `training endpoints get|delete|logs` instead of the id"})
    tags = labels.tags_field()
    gpus = count(load_default=1, minimum=1, maximum=MAX_GPUS, why="GPUs of one node",
                 description="GPUs (or CPU slots) of one node it serves on")
    pool = fields.String(load_default=None, allow_none=True)
    idleTimeout = count(load_default=DEFAULT_IDLE_TIMEOUT_S, minimum=0, maximum=MAX_TIMEOUT_S,
                        why="30 days; 0 turns idle stop off",
                        description="seconds without a request through the trainer before it stops; 0 = never")
    startTimeout = count(load_default=DEFAULT_START_TIMEOUT_S, minimum=1, maximum=MAX_TIMEOUT_S, why="30 days",
                         description="seconds it may take to become READY (again)")
    workload = fields.String(load_default=None, allow_none=True, validate=FullMatch(WORKLOAD_PATTERN))


def parse_endpoint(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ValidationFailed(reasons.body_not_an_object("endpoint"), details={"fields": {}})
    try:
        return EndpointCreateSchema().load(body)
    except ValidationError as exc:
        fields_ = _flatten(exc.messages)
        first, problems = next(iter(fields_.items()))
        raise ValidationFailed(reasons.body_field_refused("endpoint", first, problems[0]),
                               details={"field": first, "fields": fields_}) from None
