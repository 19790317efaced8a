"""GET /v1/base-models, GET /v1/base-models/MODEL_ID (ids may contain '/'), and
POST /v1/base-models/import (admin tokens only: services/api/model_import.py)."""

from __future__ import annotations

from flask import Blueprint
from werkzeug.routing import PathConverter

from services.api.auth import principal
from services.api.context import ctx
from services.api.paging import page
from services.api.schemas import BaseModelSchema, page_schema, serialise
from services.api.views import json_body
from shared import reasons
from shared.errors import ValidationFailed
from shared.planning.resolver import startable_assumptions, startable_runs

bp = Blueprint("base_models", __name__)


class ModelIdConverter(PathConverter):
    """A model id in a path (it may contain '/'): anything but `import`, so /v1/base-models/import is
    that route's alone (POST) and a GET there is a 405 whose Allow names POST, not a lookup of a model
    "import" (an id no import may take: services/api/model_import.py)."""

    regex = r"(?!import$)[^/].*?"


bp.record_once(lambda state: state.app.url_map.converters.setdefault("model_id", ModelIdConverter))
# Linux's PATH_MAX and NAME_MAX, as for a snapshot imported by path
PATH_MAX_BYTES, NAME_MAX_BYTES = 4096, 255


@bp.get("/v1/base-models")
def list_base_models():
    return serialise(page_schema(BaseModelSchema), page(ctx().catalog.list(), None))


@bp.post("/v1/base-models/import")
def import_base_model():
    """JSON `{path, id?}`: a Hugging Face model directory or a .gguf file on the API's own machine."""
    from services.api import model_import

    body = json_body()
    if (not isinstance(body, dict) or not isinstance(body.get("path"), str)
            or not isinstance(body.get("id", ""), str) or set(body) - {"path", "id"}):
        raise ValidationFailed(reasons.MODEL_IMPORT_BODY, details={"field": "path"})
    path = body["path"]
    if len(path.encode("utf-8", "surrogatepass")) > PATH_MAX_BYTES or any(
            len(name.encode("utf-8", "surrogatepass")) > NAME_MAX_BYTES for name in path.split("/")):
        raise ValidationFailed(reasons.snapshot_import_path_too_long(PATH_MAX_BYTES, NAME_MAX_BYTES),
                               details={"field": "path", "maxBytes": PATH_MAX_BYTES})
    if "\x00" in path:
        raise ValidationFailed(reasons.model_import_not_a_model(path.replace("\x00", "\\0")), details={"field": "path"})
    return serialise(BaseModelSchema, model_import.import_model(
        ctx(), path=path, model_id=body.get("id"), who=principal())), 201


@bp.get("/v1/base-models/<model_id:model_id>")
def get_base_model(model_id: str):
    context = ctx()
    model = context.catalog.get(model_id)
    return serialise(BaseModelSchema, {
        **model, "startableRuns": startable_runs(model, list(context.config.pools.values())),
        "startableRunsAssume": startable_assumptions()})
