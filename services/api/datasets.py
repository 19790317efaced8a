"""Datasets: validated on upload, stored content-addressed, never altered afterwards (SPEC 2.2);
deleted only once no run or evaluation that may still read them is left."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from services.api.auth import Principal
from services.api.context import Context
from services.api.dataset_files import ImageFile, inline_images
from shared import reasons
from shared.data.datasets import MAX_FAULTS, validate_jsonl
from shared.errors import Conflict, NotFound, ValidationFailed
from shared.lifecycle.states import EvaluationStatus, RunStatus
from shared.store.artifacts import dataset_key
from shared.store.ids import Kind, new_id
from shared.store.times import now_iso


def create_dataset(context: Context, *, data: bytes, name: str, workload: str,
                   images: dict[str, ImageFile] | None = None, tags: list[str] | None = None) -> dict[str, Any]:
    """Validate and store the rows; `images`: the files uploaded beside them, written into the rows
    that name them (services/api/dataset_files.py) before anything is validated or stored."""
    found: list[dict[str, Any]] = []
    if images:
        data, found = inline_images(data, images, max_bytes=context.config.max_upload_bytes)
    report = validate_jsonl(data)
    # a part naming a bad or unknown file is faulted once, with the file's name, not again as a URL
    named = {(f["line"], f["field"]) for f in found}
    listed = [f for f in report.faults if (f["line"], f["field"]) not in named]
    faults = sorted(found + listed, key=lambda f: f["line"])[:MAX_FAULTS]
    fault_count = len(found) + report.fault_count - (len(report.faults) - len(listed))
    if fault_count:
        first = faults[0]
        raise ValidationFailed(
            reasons.dataset_upload_refused(first["line"], first["field"], first["problem"], fault_count - 1),
            details={"faults": faults, "faultCount": fault_count},
        )
    digest = hashlib.sha256(data).hexdigest()
    if not context.artifacts.exists(dataset_key(digest)):
        context.artifacts.put_file(dataset_key(digest), data)
    return context.store.create({
        "id": new_id(Kind.DATASET),
        "kind": "dataset",
        "name": name,
        "tags": tags or [],
        "workload": workload,
        "digest": digest,
        "bytes": len(data),
        "rows": report.rows,
        "format": report.format,
        "convertedFrom": report.converted_from,
        "modality": report.modality,
        "detail": None,
    })


def visible_dataset(context: Context, dataset_id: str, who: Principal, *, field: str = "dataset",
                    by_name: bool = True) -> dict[str, Any]:
    """A dataset this token may use, still there, named by its id or (`by_name`, issue 30) by its
    name: the `--name` it was uploaded with, else its file's name. 404 naming `field` otherwise (a
    deleted one says so); 400 when a name fits several live datasets, listing their ids. Another
    workload's dataset answers as an unknown one, by id and by name."""
    doc = context.store.get(dataset_id)
    if doc is None and by_name:
        doc = _named(context, dataset_id, who, field=field)
    if doc is None or doc.get("kind") != "dataset" or not who.may_use(doc.get("workload", "")):
        raise NotFound(reasons.resource_unknown("dataset", dataset_id), details={"field": field})
    if doc.get("deleted"):
        raise NotFound(reasons.dataset_deleted(doc["id"], doc["deletedAt"]), details={"field": field})
    return doc


# The most datasets a name lookup reads: a name that fits more is refused as ambiguous all the same.
NAME_MATCHES_READ = 20


def _named(context: Context, name: str, who: Principal, *, field: str) -> dict[str, Any] | None:
    """The one live dataset of the caller's workloads called `name`; None when there is none."""
    found, _ = context.store.list("ds", limit=NAME_MATCHES_READ, where=lambda d: d.get("name") == name and not d.get(
        "deleted") and who.may_use(d.get("workload", "")))
    if len(found) > 1:
        ids = [d["id"] for d in found]
        raise ValidationFailed(reasons.dataset_name_ambiguous(name, ids), details={"field": field, "ids": ids})
    return found[0] if found else None


PREVIEW_ROWS_DEFAULT = 5
PREVIEW_ROWS_MAX = 20


def first_rows(context: Context, doc: dict[str, Any], *, limit: Any) -> dict[str, Any]:
    """The dataset's first `limit` rows as stored (the dashboard's preview; issue 30)."""
    try:
        count = PREVIEW_ROWS_DEFAULT if limit is None else int(limit)
    except (TypeError, ValueError):
        count = -1
    if not 1 <= count <= PREVIEW_ROWS_MAX:
        raise ValidationFailed(reasons.dataset_preview_limit_invalid(PREVIEW_ROWS_MAX),
                               details={"field": "limit", "value": limit})
    rows: list[Any] = []
    with context.artifacts.open(dataset_key(doc["digest"])) as f:
        for line in f:
            if line.strip():  # stored rows were validated on upload: each non-blank line is one JSON row
                rows.append(json.loads(line))
            if len(rows) == count:
                break
    return {"dataset": doc["id"], "rows": rows, "totalRows": doc["rows"]}


def delete_dataset(context: Context, dataset_id: str, who: Principal) -> dict[str, Any]:
    """Refused (409, naming them) while a run or evaluation that has not ended reads its rows (a
    PAUSED run reads them again when it resumes). Its file goes once no other live dataset holds
    the same rows (files are shared by content). The record stays, marked deleted, so the runs
    that trained on it still name it."""
    doc = visible_dataset(context, dataset_id, who, field="id", by_name=False)
    users = _readers(context, doc["digest"], who)
    if users:
        raise Conflict(reasons.dataset_in_use(dataset_id, users), details={"users": [u[1] for u in users]})

    def mark(current: dict[str, Any]) -> dict[str, Any]:
        return {**current, "deleted": True, "deletedAt": now_iso()}

    doc = context.store.update(dataset_id, mark)
    twins, _ = context.store.list("ds", where=lambda d: d["digest"] == doc["digest"] and not d.get("deleted"), limit=1)
    if not twins:
        context.artifacts.delete(dataset_key(doc["digest"]))
    context.store.add_event(dataset_id, reasons.DATASET_DELETED_BY_USER)
    return doc


def _readers(context: Context, digest: str, who: Principal) -> list[tuple[str, str, str]]:
    """(kind, id, status) of the runs and evaluations of the token's workloads that have not ended
    and read rows of `digest` (through this dataset or a twin of the same content).

    Another workload's run over rows of the same content is none of this token's business: it is
    not named, and it keeps its file, which goes only with the last live dataset of that content
    (a live run's own dataset cannot be deleted)."""
    ended_runs = {str(s) for s in RunStatus.terminal()}
    runs, _ = context.store.list("run", limit=1000, where=lambda r: r["status"] not in ended_runs and digest in (
        r.get("datasetDigest"), r.get("validationDatasetDigest")) and who.may_use(r.get("workload", "")))
    ended_evaluations = {str(s) for s in EvaluationStatus.terminal()}
    evaluations, _ = context.store.list("eval", limit=1000, where=lambda e: e["status"] not in ended_evaluations
                                        and e.get("datasetDigest") == digest and who.may_use(e.get("workload", "")))
    return [("run", r["id"], r["status"]) for r in runs] + [("evaluation", e["id"], e["status"]) for e in evaluations]
