"""`training snapshots import PATH` (SPEC 3.3): register a snapshot directory written elsewhere.

The directory must have a valid manifest; it is copied into the artifact root (so the snapshot
outlives the source) and the parts this deployment can read are recorded on the snapshot.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from services.api.context import Context
from services.api.branches import with_readable
from services.trainer_worker.engines.base import MANIFEST_FILE, read_manifest
from shared.errors import ValidationFailed
from shared.ids import Kind, new_id


def import_snapshot(context: Context, *, path: str, workload: str) -> dict[str, Any]:
    try:
        source = Path(path).expanduser()
    except RuntimeError:  # ~USER of a user this machine does not have: refused below as not absolute
        source = Path(path)
    if not source.is_absolute():
        raise ValidationFailed(f"path {path} must be absolute: the API reads it on its own machine",
                               details={"field": "path"})
    if not (source / MANIFEST_FILE).is_file():
        raise ValidationFailed(f"{source} holds no {MANIFEST_FILE}; a snapshot directory starts with its manifest",
                               details={"field": "path"})
    manifest = read_manifest(source)  # raises ValidationFailed naming the manifest field that is wrong
    snapshot_id = new_id(Kind.SNAPSHOT)
    target = context.artifacts.path("imported", snapshot_id)
    shutil.copytree(source, target)
    # read_manifest fills in a layout-1 directory's parts from the files it holds
    contents = {"weights": manifest.get("weights"), "trainingState": manifest.get("trainingState")}
    return with_readable(context.store.create({
        "id": snapshot_id,
        "kind": "snapshot",
        "run": None,  # its run lives in another deployment (or release); manifest["run"] says which
        "workload": workload,
        "step": manifest["step"],
        "layout": manifest["layout"],
        "gpus": manifest["gpus"],
        "method": manifest["method"],
        "engine": manifest.get("engine"),
        "precision": manifest["precision"],
        "model": manifest["model"],
        "contents": contents,
        "final": False,
        "imported": True,
        "source": str(source),
        "sourceRun": manifest.get("run"),
        "path": str(target.relative_to(context.artifacts.root)),
        "detail": None,
    }))
