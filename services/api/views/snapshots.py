"""Snapshots: list (?run=), get, and the adapter as a .tar.gz."""

from __future__ import annotations

from pathlib import PurePosixPath

from flask import Blueprint, request, send_file
from werkzeug.routing import BaseConverter

from services.api.archives import ADAPTER_CONFIG, portable_adapter_config, tar_gz
from services.api.auth import principal, require_workload, visible
from services.api.branches import require_intact, with_readable
from services.api.context import ctx
from services.api.paging import (
    both, checked_id, checked_workload, id_prefix_filter, page, page_args, visible_cursor, visible_filter,
)
from services.api.schemas import SnapshotSchema, page_schema, serialise
from services.api.views import json_body
from shared import reasons
from shared.errors import NotFound, ValidationFailed
from shared.schemas.names import FILE_NAME_MAX, is_file_name
from shared.store.artifacts import UnsafeKey, join
from shared.store.ids import Kind

bp = Blueprint("snapshots", __name__)


class SnapshotIdConverter(BaseConverter):
    """A snapshot id in a path: any one segment but `import`, so /v1/snapshots/import is that route's
    alone (POST) and a GET there is a 405 whose Allow names POST, not a lookup of snapshot "import"."""

    regex = r"(?!import$)[^/]+"


bp.record_once(lambda state: state.app.url_map.converters.setdefault("snapshot", SnapshotIdConverter))
# Linux's PATH_MAX and NAME_MAX: a longer path, or a longer name in it, is one no file has
# (the filesystem refuses to look it up: ENAMETOOLONG).
PATH_MAX_BYTES, NAME_MAX_BYTES = 4096, 255
ARCHIVE_TYPES = {"application/x-tar", "application/gzip", "application/x-gzip", "application/octet-stream"}


def _snapshot(snapshot_id: str) -> dict:
    doc = ctx().store.get(snapshot_id)
    return visible(doc if doc and doc.get("kind") == "snapshot" else None, "snapshot", snapshot_id)


@bp.get("/v1/snapshots")
def list_snapshots():
    limit, after = page_args(Kind.SNAPSHOT)
    run = checked_id("run", request.args.get("run"), Kind.RUN)
    where = visible_filter(both((lambda d: d.get("run") == run) if run is not None else (lambda d: True),
                                id_prefix_filter(Kind.SNAPSHOT)), what="snapshots")
    items, cursor = ctx().store.list("snap", where=where, limit=limit, after=after,
                                     cursor_visible=visible_cursor())
    return serialise(page_schema(SnapshotSchema), page([with_readable(ctx(), s) for s in items], cursor))


@bp.post("/v1/snapshots/import")
def import_snapshot():
    """The body a .tar(.gz) of the snapshot directory (`Content-Type: application/x-tar` or
    `application/gzip`; `?name=` and `?workload=` in the query), streamed to disk as it arrives; or
    the same as multipart `file` (`curl -F file=@snap.tar`); or JSON `{path, workload?}`: a
    directory on the API's own machine."""
    from services.api import snapshot_import

    def workload(asked: str | None) -> str:
        return require_workload(asked or principal().default_workload("runs"))

    if request.mimetype in ARCHIVE_TYPES or request.mimetype == "multipart/form-data":
        request.max_content_length = ctx().config.max_snapshot_upload_bytes  # before the body is read
    if request.mimetype in ARCHIVE_TYPES:
        asked = checked_workload("workload", request.args.get("workload"))
        return serialise(SnapshotSchema, snapshot_import.import_archive(
            ctx(), archive=request.stream, filename=_archive_name(), workload=workload(asked))), 201
    if request.mimetype == "multipart/form-data":
        upload = request.files.get("file")
        if upload is None or not upload.filename:
            raise ValidationFailed(reasons.SNAPSHOT_IMPORT_BODY, details={"field": "file"})
        return serialise(SnapshotSchema, snapshot_import.import_archive(
            ctx(), archive=upload.stream, filename=upload.filename,
            workload=workload(request.form.get("workload")))), 201
    body = json_body()
    if not isinstance(body, dict) or not isinstance(body.get("path"), str):
        raise ValidationFailed(reasons.SNAPSHOT_IMPORT_BODY, details={"field": "path"})
    if len(body["path"].encode("utf-8", "surrogatepass")) > PATH_MAX_BYTES or any(
            len(name.encode("utf-8", "surrogatepass")) > NAME_MAX_BYTES for name in body["path"].split("/")):
        raise ValidationFailed(reasons.snapshot_import_path_too_long(PATH_MAX_BYTES, NAME_MAX_BYTES),
                               details={"field": "path", "maxBytes": PATH_MAX_BYTES})
    return serialise(SnapshotSchema, snapshot_import.import_directory(
        ctx(), path=body["path"], workload=workload(body.get("workload")), who=principal())), 201


def _archive_name() -> str:
    """?name= of an archive body: the upload's file name, said in the snapshot's `source` and in
    refusals; one path segment of printable characters."""
    name = request.args.get("name")
    if name is None:
        return "the upload"
    if not is_file_name(name):
        raise ValidationFailed(reasons.query_file_name_invalid("name", FILE_NAME_MAX), details={"field": "name"})
    return name


@bp.get("/v1/snapshots/<snapshot:snapshot_id>")
def get_snapshot(snapshot_id: str):
    return serialise(SnapshotSchema, with_readable(ctx(), _snapshot(snapshot_id)))


@bp.get("/v1/snapshots/<snapshot:snapshot_id>/adapter")
def download_adapter(snapshot_id: str):
    doc = _snapshot(snapshot_id)
    weights = (doc.get("contents") or {}).get("weights")
    if not isinstance(weights, dict):  # null, or (stored before manifests were checked) not an object
        raise NotFound(reasons.snapshot_has_no_weights(snapshot_id), details={"id": snapshot_id})
    artifacts = ctx().artifacts
    keys = []
    try:
        adapter = join(doc["path"], str(weights.get("path") or "adapter"))
        if PurePosixPath(adapter).is_relative_to(PurePosixPath(doc["path"])):  # a stored path may not leave it
            keys = [k for k in artifacts.list(adapter)
                    if PurePosixPath(k).parent == PurePosixPath(adapter) and PurePosixPath(k).name.startswith("adapter_")]
    except UnsafeKey:
        keys = []
    if not keys:
        raise NotFound(reasons.snapshot_adapter_files_missing(snapshot_id), details={"id": snapshot_id})
    require_intact(ctx(), doc, "weights", field="id")  # never a tar of a truncated or altered adapter
    replaced = {}
    for key in keys:  # base_model_name_or_path: the catalog id, not the worker's local directory
        if PurePosixPath(key).name == ADAPTER_CONFIG:
            with artifacts.open(key) as f:
                portable = portable_adapter_config(f.read(), doc.get("model"))
            if portable is not None:
                replaced[ADAPTER_CONFIG] = portable
    buffer = tar_gz(artifacts, [(key, PurePosixPath(key).name) for key in keys], replaced)
    return send_file(buffer, mimetype="application/gzip", as_attachment=True,
                     download_name=f"{snapshot_id}-adapter.tar.gz")
