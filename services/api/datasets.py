"""Datasets: validated on upload, stored content-addressed, never altered afterwards (SPEC 2.2)."""

from __future__ import annotations

import hashlib
from typing import Any

from services.api.context import Context
from shared.datasets import validate_jsonl
from shared.errors import ValidationFailed
from shared.ids import Kind, new_id


def create_dataset(context: Context, *, data: bytes, name: str, workload: str) -> dict[str, Any]:
    report = validate_jsonl(data)
    if report.fault_count:
        first = report.faults[0]
        more = f" (and {report.fault_count - 1} more)" if report.fault_count > 1 else ""
        raise ValidationFailed(
            f"dataset line {first['line']}, field {first['field']}: {first['problem']}{more}",
            details={"faults": report.faults, "faultCount": report.fault_count},
        )
    digest = hashlib.sha256(data).hexdigest()
    path = context.artifacts.dataset_path(digest)
    if not path.exists():
        context.artifacts.write_bytes_atomic(path, data)
    return context.store.create({
        "id": new_id(Kind.DATASET),
        "kind": "dataset",
        "name": name,
        "workload": workload,
        "digest": digest,
        "bytes": len(data),
        "rows": report.rows,
        "format": report.format,
        "detail": None,
    })
