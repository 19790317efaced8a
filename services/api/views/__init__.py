"""One Flask blueprint per resource: parse the request, call the domain module, serialise."""

from __future__ import annotations

from typing import Any

from flask import request

from shared import reasons
from shared.errors import ValidationFailed
from shared.schemas import json_values


def json_body() -> Any:
    """The request body as JSON, None when it is not JSON (or not sent as JSON, as Flask's
    `get_json(silent=True)` reads it); a 400 naming the place for JSON nested too deep or holding
    a lone surrogate (shared/schemas/json_values.py), which Flask would parse into a 500 or let through."""
    if not request.is_json:
        return None
    try:
        return json_values.loads(request.get_data(cache=True))
    except json_values.JsonRefused as exc:
        raise ValidationFailed(reasons.request_body_refused(exc.field, exc.problem),
                               details={"field": exc.field or "(body)"}) from None
    except ValueError:  # not JSON (UnicodeDecodeError included)
        return None


def json_object_body() -> dict[str, Any]:
    """The request body as a JSON object, or a 400 saying that is what it must be."""
    body = json_body()
    if not isinstance(body, dict):
        raise ValidationFailed(reasons.REQUEST_BODY_NOT_JSON_OBJECT)
    return body
