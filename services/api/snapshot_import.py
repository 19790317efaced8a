"""`training snapshots import PATH` (SPEC 3.3): register a snapshot directory written elsewhere.

Two ways in, one registration:
- an archive upload (`import_archive`): the CLI tars the directory on the user's machine and the
  API unpacks it into the artifact root, so the API need not see the user's files;
- a path on the API's own machine (`import_directory`, `--on-server`): for a directory already on
  a filesystem the deployment shares, copied without passing through the client.

The directory must have a valid manifest; it lands in the artifact store (so the snapshot outlives
the source) and the parts this deployment can read are recorded on the snapshot.
"""

from __future__ import annotations

import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import IO, Any

from services.api.branches import with_readable
from services.api.context import Context
from shared import reasons
from shared.artifacts import imported_snapshot_key
from shared.errors import ValidationFailed
from shared.ids import Kind, new_id
from shared.snapshots import MANIFEST_FILE, read_manifest


def import_directory(context: Context, *, path: str, workload: str) -> dict[str, Any]:
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
    key = context.artifacts.put_dir(source, imported_snapshot_key(snapshot_id))
    return _register(context, snapshot_id, key, manifest, workload=workload, source=str(source))


def import_archive(context: Context, *, archive: IO[bytes], filename: str, workload: str) -> dict[str, Any]:
    """Unpack a .tar (or .tar.gz), read as a stream, of a snapshot directory (its manifest at the top, or in its one
    top-level directory) into the artifact root and register it. Members that would land outside
    the directory, links that point outside it and device files are refused (tarfile's `data`
    filter); a refused archive leaves nothing behind."""
    # unpacked in this node's scratch space beside the store (on one filesystem the move is a rename)
    work = Path(tempfile.mkdtemp(prefix=".incoming-", dir=context.artifacts.scratch("imported")))
    try:
        try:
            with tarfile.open(fileobj=archive, mode="r|*") as tar:  # a stream: read once, never sought
                tar.extractall(work / "x", filter="data")
        except tarfile.FilterError as exc:
            raise ValidationFailed(reasons.snapshot_archive_unsafe(filename, str(exc)),
                                   details={"field": "file"}) from None
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise ValidationFailed(reasons.snapshot_archive_unreadable(filename, str(exc)),
                                   details={"field": "file"}) from None
        source = _snapshot_root(work / "x", filename)
        manifest = read_manifest(source)
        snapshot_id = new_id(Kind.SNAPSHOT)
        key = context.artifacts.put_dir(source, imported_snapshot_key(snapshot_id), move=True)
        return _register(context, snapshot_id, key, manifest, workload=workload, source=f"upload:{filename}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _snapshot_root(unpacked: Path, filename: str) -> Path:
    if (unpacked / MANIFEST_FILE).is_file():
        return unpacked
    entries = list(unpacked.iterdir()) if unpacked.is_dir() else []
    if len(entries) == 1 and entries[0].is_dir() and (entries[0] / MANIFEST_FILE).is_file():
        return entries[0]
    raise ValidationFailed(reasons.snapshot_archive_no_manifest(filename), details={"field": "file"})


def _register(context: Context, snapshot_id: str, key: str, manifest: dict[str, Any], *, workload: str,
              source: str) -> dict[str, Any]:
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
        "source": source,
        "sourceRun": manifest.get("run"),
        "path": key,
        "detail": None,
    }))
