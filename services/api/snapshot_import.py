"""`training snapshots import PATH` (SPEC 3.3): register a snapshot directory written elsewhere.

Two ways in, one registration:
- an archive upload (`import_archive`): the CLI tars the directory on the user's machine and the
  API unpacks it into the artifact root, so the API need not see the user's files;
- a path on the API's own machine (`import_directory`, `--on-server`): for a directory already on
  a filesystem the deployment shares, copied without passing through the client. Admin tokens
  only, from under the config's `snapshotImportRoots`, plain files and directories only.

The directory must have a valid manifest; it lands in the artifact store (so the snapshot outlives
the source) and the parts this deployment can read are recorded on the snapshot. It may hold only
what its manifest declares (services/api/snapshot_members.py): files inside its parts, and, when the
manifest lists its files, those files at their listed sizes; an archive is checked member by member
as it streams in, so a file that does not belong is refused before it is written. Every refusal
leaves nothing behind; a full disk is a 507 (shared/process/disk_full.py), not a fault of the archive.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
from pathlib import Path, PurePosixPath
from typing import IO, Any

from services.api.auth import Principal
from services.api.branches import with_readable
from services.api.context import Context
from services.api.plain_tree import copy_plain_tree, real_under_roots
from services.api.snapshot_members import SnapshotMembers, relative
from shared import reasons
from shared.errors import Forbidden, TooLarge, ValidationFailed
from shared.process.disk_full import disk_full
from shared.snapshots.files import damage, listed_damage, record
from shared.snapshots.manifest import MANIFEST_FILE, MAX_MANIFEST_BYTES, check_adapter_config, parse_manifest, read_manifest
from shared.store.artifacts import imported_snapshot_key
from shared.store.ids import Kind, new_id


def import_directory(context: Context, *, path: str, workload: str, who: Principal) -> dict[str, Any]:
    """A directory on the API's own machine: for admin tokens only, from under the deployment's
    `snapshotImportRoots`, and made of plain files and directories (no link may lead the copy to
    a file elsewhere: another workload's snapshot, a secret of the API's user)."""
    if not who.admin:
        raise Forbidden(reasons.SNAPSHOT_PATH_IMPORT_ADMIN_ONLY, details={"field": "path"})
    source = _confined(context, path)
    manifest = read_manifest(source)  # raises ValidationFailed naming the manifest field that is wrong
    members = SnapshotMembers(manifest, source=path, field="path",
                              limit_bytes=context.config.max_snapshot_unpacked_bytes,
                              manifest_bytes=(source / MANIFEST_FILE).stat().st_size)
    snapshot_id = new_id(Kind.SNAPSHOT)
    work = Path(tempfile.mkdtemp(prefix=".incoming-", dir=context.artifacts.scratch("imported")))
    try:
        copy_plain_tree(source, work / "x", not_plain=lambda inside: reasons.snapshot_path_not_plain(path, inside),
                        admit=lambda inside, size: members.admit(inside, size) if inside != MANIFEST_FILE else None)
        key = context.artifacts.put_dir(work / "x", imported_snapshot_key(snapshot_id), move=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return _register(context, snapshot_id, key, manifest, workload=workload, source=str(source))


def _confined(context: Context, path: str) -> Path:
    """The absolute directory `path` names, once it is known to be inside an import root and reached
    through no symbolic link below that root; ValidationFailed (or Forbidden) naming what is wrong."""
    roots = context.config.snapshot_import_roots
    if not roots:
        raise Forbidden(reasons.SNAPSHOT_PATH_IMPORT_OFF, details={"field": "path"})
    source = Path(path)
    if not source.is_absolute():
        raise ValidationFailed(reasons.snapshot_path_not_absolute(path), details={"field": "path"})
    real = real_under_roots(path, roots, not_plain=lambda: reasons.snapshot_path_not_plain(path, path))
    if real is None:
        raise ValidationFailed(reasons.snapshot_path_outside_roots(path, [str(r) for r in roots]),
                               details={"field": "path"})
    if os.path.islink(real / MANIFEST_FILE):
        raise ValidationFailed(reasons.snapshot_path_not_plain(path, MANIFEST_FILE), details={"field": "path"})
    if not (real / MANIFEST_FILE).is_file():
        raise ValidationFailed(reasons.import_dir_without_manifest(str(source), MANIFEST_FILE),
                               details={"field": "path"})
    return real


def import_archive(context: Context, *, archive: IO[bytes], filename: str, workload: str) -> dict[str, Any]:
    """Unpack a .tar (or .tar.gz), read as a stream, of a snapshot directory (its manifest at the top, or in its one
    top-level directory) into the artifact root and register it. Members that would land outside
    the directory, links and device files are refused (tarfile's `data` filter), and so is any
    file the manifest does not declare (`_unpack`); a refused archive leaves nothing behind."""
    # unpacked in this node's scratch space beside the store (on one filesystem the move is a rename)
    work = Path(tempfile.mkdtemp(prefix=".incoming-", dir=context.artifacts.scratch("imported")))
    try:
        try:
            with tarfile.open(fileobj=archive, mode="r|*") as tar:  # a stream: read once, never sought
                _unpack(context, tar, work / "x", filename)
        except tarfile.FilterError as exc:
            raise ValidationFailed(reasons.snapshot_archive_unsafe(filename, _filter_problem(exc)),
                                   details={"field": "file"}) from None
        except (tarfile.TarError, EOFError, OSError) as exc:
            if disk_full(exc):
                raise  # the disk, not the archive: a 507 (services/api/app.py)
            problem = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ValidationFailed(reasons.snapshot_archive_unreadable(filename, problem),
                                   details={"field": "file"}) from None
        source = _snapshot_root(work / "x", filename)
        manifest = read_manifest(source)
        snapshot_id = new_id(Kind.SNAPSHOT)
        key = context.artifacts.put_dir(source, imported_snapshot_key(snapshot_id), move=True)
        return _register(context, snapshot_id, key, manifest, workload=workload, source=f"upload:{filename}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _unpack(context: Context, tar: tarfile.TarFile, target: Path, filename: str) -> None:
    """Extract member by member, plain files and directories only (tarfile's `data` filter refuses
    what would land outside `target`), each checked before it is written:

    - from the manifest on (`snapshot.json` at the top or in the one top-level directory; the CLI
      sends it first), every file must belong to the snapshot it declares (SnapshotMembers: inside
      its parts, listed at its size when it lists files, within the bytes it declares);
    - before it, files are held to `maxSnapshotUnpackedBytes`, and each is checked the same way the
      moment the manifest arrives;
    - never more than `maxSnapshotFiles` members.

    A header that lies about its size stops at the first member it lies about."""
    limit, most = context.config.max_snapshot_unpacked_bytes, context.config.max_snapshot_files
    members: SnapshotMembers | None = None
    root: tuple[str, ...] = ()
    early: list[tuple[tuple[str, ...], int]] = []  # the files read before the manifest: (name parts, size)
    unpacked, count = 0, 0
    for member in tar:
        if not (member.isfile() or member.isdir()):
            raise tarfile.FilterError(f"{member.name} is not a plain file or directory")
        member = tarfile.data_filter(member, str(target))  # refuses escapes before anything is read
        count += 1
        if count > most:
            raise TooLarge(reasons.snapshot_archive_too_many_files(filename, most),
                           details={"field": "file", "maxFiles": most})
        parts = PurePosixPath(relative(member.name)).parts
        if members is None and member.isfile() and parts and parts[-1] == MANIFEST_FILE and len(parts) <= 2:
            root = parts[:-1]
            members = _read_manifest_member(context, tar, member, target, filename, limit)
            for held, size in early:
                members.admit(_inside(held, root, filename), size)
            continue
        if member.isfile():
            if members is not None:
                members.admit(_inside(parts, root, filename), member.size)
            else:
                early.append((parts, member.size))
                unpacked += member.size
                if unpacked > limit:
                    raise TooLarge(reasons.snapshot_archive_too_large_unpacked(filename, limit),
                                   details={"field": "file", "maxUnpackedBytes": limit})
        elif members is not None:
            _inside(parts, root, filename, directory=True)
        tar.extract(member, target, filter="data")


def _read_manifest_member(context: Context, tar: tarfile.TarFile, member: tarfile.TarInfo, target: Path,
                          filename: str, limit: int) -> SnapshotMembers:
    """Read the manifest member (bounded), check it, write it, and say what the rest may hold."""
    if member.size > MAX_MANIFEST_BYTES:
        raise ValidationFailed(reasons.manifest_too_large(MAX_MANIFEST_BYTES),
                               details={"field": "file", "file": MANIFEST_FILE, "maxBytes": MAX_MANIFEST_BYTES})
    data = tar.extractfile(member).read()
    manifest = parse_manifest(data)  # raises ValidationFailed naming the manifest field that is wrong
    path = target.joinpath(*PurePosixPath(relative(member.name)).parts)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return SnapshotMembers(manifest, source=filename, field="file", limit_bytes=limit, manifest_bytes=len(data))


def _inside(parts: tuple[str, ...], root: tuple[str, ...], filename: str, *, directory: bool = False) -> str:
    """A member's path relative to the snapshot directory (the manifest's); refused when outside it."""
    if tuple(parts[:len(root)]) != root or (not directory and len(parts) == len(root)):
        name = "/".join(parts)
        raise ValidationFailed(reasons.snapshot_archive_outside_root(filename, name, "/".join(root)),
                               details={"field": "file", "file": name})
    return "/".join(parts[len(root):])


def _filter_problem(exc: tarfile.FilterError) -> str:
    """What tarfile's filter refused, without the server's paths its own message holds."""
    member = getattr(exc, "tarinfo", None)
    if member is None:
        return str(exc)
    problems = {
        tarfile.AbsolutePathError: "has an absolute path",
        tarfile.OutsideDestinationError: "would land outside the snapshot directory",
        tarfile.SpecialFileError: "is not a plain file or directory",
        tarfile.AbsoluteLinkError: "is a link to an absolute path",
        tarfile.LinkOutsideDestinationError: "is a link to outside the snapshot directory",
    }
    problem = next((text for kind, text in problems.items() if isinstance(exc, kind)), "is refused")
    return reasons.snapshot_member_refused(member.name, problem)


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
    directory = context.artifacts.get_dir(key)
    try:
        check_adapter_config(directory, manifest)
    except ValidationFailed as exc:
        context.artifacts.delete(key)
        exc.details = {**exc.details, "field": "file" if source.startswith("upload:") else "path"}
        raise
    files = record(directory)  # as it arrived: a snapshot damaged later reads as damaged
    listed = manifest.get("files")
    if listed:  # it says what its files were: they must be, each part's and every other it lists
        found = next((d for part in ("weights", "trainingState") if contents.get(part) for d in
                      [damage(directory, contents, listed, part=part, deep=True, found=files)] if d), None)
        found = found or listed_damage(listed, files)
        if found is not None:
            context.artifacts.delete(key)
            raise ValidationFailed(reasons.snapshot_import_damaged(source, found.file, found.problem),
                                   details={"field": "file" if source.startswith("upload:") else "path",
                                            "file": found.file})
    return with_readable(context, context.store.create({
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
        "files": files,
        "detail": None,
    }))
