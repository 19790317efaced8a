"""The body of POST /v1/endpoints (SPEC 7): one schema, with its help text."""

from __future__ import annotations

from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate

from shared.errors import ValidationFailed
from shared.plans import _flatten

DEFAULT_IDLE_TIMEOUT_S = 3600
DEFAULT_START_TIMEOUT_S = 600

# A name stands where an id may (`model` of a proxied request, the endpoint routes), so it may not
# look like one: shared/endpoint_names.find_endpoint reads "ep-..." as an id.
NAME_PATTERN = r"^(?!ep-)[A-Za-z0-9_.:-]{1,64}$"
NAME_RULE = "1 to 64 letters, digits or `_.:-`, not starting with `ep-` (the ids' prefix)"


class EndpointCreateSchema(Schema):
    class Meta:
        unknown = RAISE

    model = fields.String(required=True, metadata={"description": "base-model id from the catalog"})
    snapshot = fields.String(load_default=None, allow_none=True,
                             metadata={"description": "serve this snapshot's adapter over the model"})
    name = fields.String(load_default=None, allow_none=True, validate=validate.Regexp(NAME_PATTERN, error=NAME_RULE),
                         metadata={"description": "a name requests may use as `model` instead of the id, "
                                                  "and `training endpoints get|delete|logs` instead of the id"})
    gpus = fields.Integer(load_default=1, validate=validate.Range(min=1, max=64))
    pool = fields.String(load_default=None, allow_none=True)
    idleTimeout = fields.Integer(load_default=DEFAULT_IDLE_TIMEOUT_S, validate=validate.Range(min=0),
                                 metadata={"description": "seconds without a request through the trainer before "
                                                          "it stops; 0 = never"})
    startTimeout = fields.Integer(load_default=DEFAULT_START_TIMEOUT_S, validate=validate.Range(min=1),
                                  metadata={"description": "seconds it may take to become READY (again)"})
    workload = fields.String(load_default=None, allow_none=True, validate=validate.Regexp(r"^[A-Za-z0-9_.-]{1,64}$"))


def parse_endpoint(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ValidationFailed("the endpoint must be a JSON object", details={"fields": {}})
    try:
        return EndpointCreateSchema().load(body)
    except ValidationError as exc:
        fields_ = _flatten(exc.messages)
        first, problems = next(iter(fields_.items()))
        raise ValidationFailed(f"endpoint field {first}: {problems[0]}", details={"fields": fields_}) from None
