"""One Flask blueprint per resource: parse the request, call the domain module, serialise."""

from __future__ import annotations

from typing import Any

from flask import request

from shared import reasons
from shared.errors import ValidationFailed


def json_object_body() -> dict[str, Any]:
    """The request body as a JSON object, or a 400 saying that is what it must be."""
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise ValidationFailed(reasons.REQUEST_BODY_NOT_JSON_OBJECT)
    return body
