"""Snapshots: manifests, archives and directories imported (services/api/snapshot_import.py),
damaged files (shared/snapshots/files.py); refusals that leave nothing behind."""

from __future__ import annotations

import json


def manifest_field_invalid(manifest_path: str, field: str, must: str, value: object) -> str:
    """An imported snapshot's manifest holds a field of the wrong type or value (`must` says what it
    must be, e.g. "a JSON object or null")."""
    if isinstance(value, dict):
        got = "a JSON object"
    elif isinstance(value, list):
        got = "a list"
    elif isinstance(value, str):
        got = f"the string {json.dumps(value if len(value) <= 60 else value[:57] + '...')}"
    else:
        got = json.dumps(value)  # null, true, false or a number
    return f"{manifest_path}: {field} must be {must}, not {got}"


def snapshot_has_no_weights(snapshot_id: str) -> str:
    """GET /v1/snapshots/ID/adapter on a snapshot whose manifest lists no weights."""
    return f"snapshot {snapshot_id} holds no weights (its manifest lists none), so it has no adapter to download"


def snapshot_archive_unreadable(filename: str, error: str) -> str:
    return f"{filename} is not a readable .tar or .tar.gz of a snapshot directory ({error})"


def snapshot_archive_unsafe(filename: str, error: str) -> str:
    """A member that would land outside the snapshot directory, a link out of it, a device file."""
    return f"{filename} holds a member the trainer will not unpack ({error}); a snapshot archive holds plain files"


def snapshot_archive_no_manifest(filename: str) -> str:
    return (f"{filename} holds no snapshot.json at its top or in its one top-level directory; "
            "a snapshot directory starts with its manifest")


def snapshot_archive_too_large_unpacked(filename: str, limit_bytes: int) -> str:
    return f"{filename} unpacks to more than this deployment accepts ({limit_bytes} bytes unpacked)"


def snapshot_archive_too_many_files(filename: str, limit: int) -> str:
    return f"{filename} holds more files than a snapshot directory may ({limit})"


def snapshot_damaged(snapshot_id: str, file: str, problem: str) -> str:
    """A snapshot whose files are not as it recorded them (shared/snapshots/files.py)."""
    return f"snapshot {snapshot_id} is damaged: its file {file} {problem}"


def snapshot_import_damaged(source: str, file: str, problem: str) -> str:
    """An imported directory whose manifest lists its files, and one of them is not as listed."""
    return f"the snapshot directory {source} is damaged: its file {file} {problem}"


def snapshot_resumed_from_older(damaged_id: str, file: str, problem: str, older_id: str, step: int) -> str:
    """A run resuming past a damaged snapshot (the warn event of services/trainer_worker/run_job.py)."""
    return (f"snapshot {damaged_id} is damaged (its file {file} {problem}); resuming from {older_id} "
            f"(step {step}), the newest intact snapshot with training state")


SNAPSHOT_PATH_IMPORT_ADMIN_ONLY = ("importing a snapshot by a path on the API's machine needs an admin token; "
                                   "upload the directory instead (`training snapshots import DIR`)")


SNAPSHOT_PATH_IMPORT_OFF = ("this deployment imports snapshots by path from no directory (snapshotImportRoots is "
                            "empty); upload the directory instead (`training snapshots import DIR`)")


def snapshot_path_outside_roots(path: str, roots: list[str]) -> str:
    return (f"path {path} is not inside a snapshot import root of this deployment "
            f"({', '.join(roots)}); its deployment config lists them under snapshotImportRoots")


def snapshot_path_not_plain(path: str, entry: str) -> str:
    return (f"{entry} in {path} is a symbolic link or not a plain file; a snapshot directory holds plain "
            "files and directories only")


SNAPSHOT_IMPORT_BODY = ("a snapshot import is a multipart upload of `file` (a .tar or .tar.gz of the snapshot "
                        "directory), or a JSON object with `path`, a directory on the API's own machine")


def snapshot_import_path_too_long(max_bytes: int, max_name_bytes: int) -> str:
    return (f"path is longer than a path on the API's machine may be ({max_bytes} bytes, and {max_name_bytes} "
            "for each name in it)")


def manifest_refused(field: str | None, problem: str) -> str:
    """snapshot.json holds JSON that shared/json_values refuses (`problem` from json_too_deep,
    lone_surrogate, number_not_finite, ...); `field` names where, None for the whole manifest."""
    return f"snapshot.json {problem}" if field is None else f"snapshot.json: {field} {problem}"


def manifest_too_large(most: int) -> str:
    return f"snapshot.json is larger than a manifest may be ({most} bytes)"


def snapshot_archive_unlisted(filename: str, member: str) -> str:
    """A file in an archive whose manifest lists its files, and not this one (`member` relative to
    the snapshot directory)."""
    return (f"{filename} holds {member}, which its manifest's files do not list; a snapshot directory holds "
            "the files its manifest lists and no others")


def snapshot_archive_outside_parts(filename: str, member: str, parts: list[str]) -> str:
    """A file outside every part directory the manifest declares (`parts`, e.g. ["adapter/", "training_state/"])."""
    where = f"its parts lie in {', '.join(parts)}" if parts else "it declares no parts"
    return (f"{filename} holds {member}, which is in no part of the snapshot ({where}); a snapshot directory "
            "holds its manifest and its parts' files only")


def snapshot_archive_twice(filename: str, member: str) -> str:
    return f"{filename} holds {member} twice; a snapshot directory has one file of each name"


def snapshot_archive_outside_root(filename: str, member: str, root: str) -> str:
    return (f"{filename} holds {member}, outside the snapshot directory {root}/ that holds its manifest; an archive "
            "holds one snapshot directory")


def snapshot_archive_declares_too_much(filename: str, declared: int, limit: int) -> str:
    return (f"{filename}'s manifest lists {declared} bytes of files, more than this deployment accepts "
            f"({limit} bytes unpacked)")


def adapter_config_refused(file: str, problem: str) -> str:
    """An imported snapshot's adapter_config.json that no reader could take (`problem`, e.g. "is not
    a JSON object", json_too_deep's phrase); `file` relative to the snapshot directory."""
    return f"{file} {problem}; an adapter config is a JSON object of PEFT's settings"


def snapshot_member_refused(member: str, problem: str) -> str:
    """tarfile's `data` filter refused a member; said without the server's paths."""
    return f"{member} {problem}"


# --- A snapshot directory's manifest read (shared/snapshots/manifest.py read_manifest, parse_manifest).

def snapshot_dir_without_manifest(manifest: str) -> str:
    return f"the snapshot directory holds no {manifest}"


def manifest_unreadable(manifest: str, error: str | None) -> str:
    return f"{manifest} cannot be read ({error})"


def manifest_not_json(manifest: str, error: str) -> str:
    return f"{manifest} is not a JSON manifest: {error}"


def manifest_not_an_object(manifest: str) -> str:
    return f"{manifest} is not a JSON object"


def manifest_lacks(manifest: str, missing: list[str]) -> str:
    return f"{manifest} lacks {', '.join(missing)}"


def import_dir_without_manifest(directory: str, manifest: str) -> str:
    """A directory to import (`training snapshots import DIR`, or a path on the API's machine) with no manifest."""
    return f"{directory} holds no {manifest}; a snapshot directory starts with its manifest"


def snapshot_path_not_absolute(path: str) -> str:
    return f"path {path} must be absolute: the API reads it on its own machine"


def snapshot_adapter_files_missing(snapshot_id: str) -> str:
    return f"snapshot {snapshot_id} has no adapter files on disk"


def snapshot_unknown(snapshot_id: str) -> str:
    """A snapshot a request names that does not exist, or that this token may not see."""
    return f"snapshot {snapshot_id} does not exist"
