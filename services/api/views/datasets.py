"""POST /v1/datasets (multipart `file`, and `images` files its rows name), GET /v1/datasets, GET /v1/datasets/ID,
GET /v1/datasets/ID/rows (its first rows, the dashboard's preview), DELETE /v1/datasets/ID."""

from __future__ import annotations

from flask import Blueprint, request
from marshmallow import ValidationError

from services.api.auth import principal, require_workload
from services.api.context import ctx
from services.api.dataset_files import read_image_files
from services.api.datasets import create_dataset, delete_dataset, first_rows, visible_dataset
from services.api.paging import both, id_prefix_filter, label_filter, page, page_args, visible_cursor, visible_filter
from services.api.schemas import DatasetRowsSchema, DatasetSchema, page_schema, serialise
from shared import reasons
from shared.errors import ValidationFailed
from shared.schemas import labels
from shared.store.ids import Kind

bp = Blueprint("datasets", __name__)


def form_tags(values: list[str]) -> list[str]:
    """The form's `tags` (repeated, or one comma list), each checked as a body's tags are."""
    tags = [tag.strip() for value in values for tag in value.split(",") if tag.strip()]
    try:
        return labels.tags_field().deserialize(tags)
    except ValidationError as exc:
        problems = exc.messages if isinstance(exc.messages, list) else [m for ms in exc.messages.values() for m in ms]
        raise ValidationFailed(reasons.form_field_refused("tags", str(problems[0])), details={"field": "tags"}) from None


@bp.post("/v1/datasets")
def upload_dataset():
    upload = request.files.get("file")
    if upload is None:
        raise ValidationFailed(reasons.DATASET_UPLOAD_WITHOUT_FILE, details={"field": "file"})
    workload = request.form.get("workload") or principal().default_workload("runs")
    require_workload(workload)
    name = request.form.get("name") or upload.filename or "dataset.jsonl"
    if not labels.is_name(name):
        raise ValidationFailed(reasons.form_field_refused("name", reasons.name_rule(labels.NAME_MAX)),
                               details={"field": "name"})
    tags = form_tags(request.form.getlist("tags"))
    images = read_image_files([(f.filename, f.stream) for f in request.files.getlist("images")])
    doc = create_dataset(ctx(), data=upload.read(), name=name, workload=workload, images=images, tags=tags)
    return serialise(DatasetSchema, doc), 201


@bp.get("/v1/datasets")
def list_datasets():
    limit, after = page_args(Kind.DATASET)
    items, cursor = ctx().store.list("ds", where=visible_filter(
        both(lambda d: not d.get("deleted"), label_filter(), id_prefix_filter(Kind.DATASET)), what="datasets"),
                                     limit=limit, after=after,
                                     cursor_visible=visible_cursor())
    return serialise(page_schema(DatasetSchema), page(items, cursor))


@bp.get("/v1/datasets/<dataset_id>")
def get_dataset(dataset_id: str):
    return serialise(DatasetSchema, visible_dataset(ctx(), dataset_id, principal(), field="id"))


@bp.get("/v1/datasets/<dataset_id>/rows")
def dataset_rows(dataset_id: str):
    doc = visible_dataset(ctx(), dataset_id, principal(), field="id")
    return serialise(DatasetRowsSchema, first_rows(ctx(), doc, limit=request.args.get("limit")))


@bp.delete("/v1/datasets/<dataset_id>")
def remove_dataset(dataset_id: str):
    return serialise(DatasetSchema, delete_dataset(ctx(), dataset_id, principal()))
