"""A snapshot's files and whether they are intact (issue 14: a damaged snapshot must read as such).

A snapshot this release writes records every file of its directory but the manifest, with its size
and sha256 (`record`), in its manifest's `files` and on its snapshot document. Checks:

- **quick** (`damage(..., deep=False)`): each file a part needs exists with the size recorded; what
  every list and get of snapshots uses, so a deleted or truncated file shows at once;
- **deep** (`deep=True`): the sha256 as well; before work is queued on a snapshot (a branch, an
  endpoint, an evaluation), before an adapter download, before a run resumes from one.

A snapshot that records no files (written before this, or imported without them) is checked for
the files its part must hold, each present and not empty.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from shared.snapshots.manifest import ADAPTER_DIR, LAYOUT1_STATE_FILES, MANIFEST_FILE, TRAINING_STATE_DIR

_CHUNK = 1024 * 1024


class Damage(NamedTuple):
    """The first file of a part that is not as the snapshot recorded it."""

    file: str  # relative to the snapshot directory
    problem: str  # "is missing", "has 10 bytes; the snapshot recorded 20 bytes", ...


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def record(directory: Path) -> dict[str, dict[str, Any]]:
    """Every regular file under `directory` but the manifest: relative path -> {bytes, sha256}."""
    directory = Path(directory)
    files: dict[str, dict[str, Any]] = {}
    for root, _, names in os.walk(directory, followlinks=False):
        for name in names:
            path = Path(root) / name
            relative = path.relative_to(directory).as_posix()
            if relative == MANIFEST_FILE or path.is_symlink() or not path.is_file():
                continue
            files[relative] = {"bytes": path.stat().st_size, "sha256": sha256_of(path)}
    return dict(sorted(files.items()))


def _part_dir(contents: dict[str, Any], part: str) -> str:
    value = contents.get(part) if isinstance(contents.get(part), dict) else {}
    default = ADAPTER_DIR if part == "weights" else TRAINING_STATE_DIR
    return PurePosixPath(str(value.get("path") or default)).as_posix()


def _under(relative: str, folder: str) -> bool:
    return folder in ("", ".") or relative == folder or relative.startswith(folder.rstrip("/") + "/")


def _expected(contents: dict[str, Any], part: str, files: dict[str, Any] | None) -> list[str]:
    """The files a part of the snapshot must hold."""
    folder = _part_dir(contents, part)
    if files:
        if part == "weights":
            return [f for f in files if _under(f, folder) and PurePosixPath(f).name.startswith("adapter_")]
        state = [f for f in files if _under(f, folder)]
        if folder in ("", "."):  # layout 1: one directory for both parts
            state = [f for f in state if not PurePosixPath(f).name.startswith("adapter_")]
        return state
    join = (lambda name: name) if folder in ("", ".") else (lambda name: f"{folder}/{name}")
    if part == "weights":
        weights = (contents.get("weights") or {}) if isinstance(contents.get("weights"), dict) else {}
        return [join("adapter_config.json"), join(weights.get("file") or "adapter_model.safetensors")]
    return [join(name) for name in LAYOUT1_STATE_FILES]


def damage(directory: Path, contents: dict[str, Any], files: dict[str, Any] | None, *, part: str,
           deep: bool = False, found: dict[str, dict[str, Any]] | None = None) -> Damage | None:
    """The first file of `part` ("weights" or "trainingState") that is missing, of another size than
    recorded, empty where nothing was recorded, or (with `deep`) of another sha256; None when intact.

    `found`: the directory's own `record`, when one was just made: compared instead of reading the
    files again (an import hashes each file once)."""
    directory = Path(directory)
    expected = _expected(contents, part, files)
    if not expected:
        folder = _part_dir(contents, part)
        return Damage(folder if folder not in ("", ".") else ".", f"holds no files of its {part}")
    for relative in expected:
        path = directory / relative
        if found is not None:
            if relative not in found:
                return Damage(relative, "is missing")
            size, known_sha256 = found[relative]["bytes"], found[relative]["sha256"]
        else:
            if path.is_symlink() or not path.is_file():
                return Damage(relative, "is missing")
            size, known_sha256 = path.stat().st_size, None
        want = (files or {}).get(relative)
        if want is None:
            if size == 0:
                return Damage(relative, "is empty")
            continue
        if size != want["bytes"]:
            return Damage(relative, size_problem(size, want["bytes"]))
        if deep and (known_sha256 or sha256_of(path)) != want["sha256"]:
            return Damage(relative, "is not the file the snapshot recorded (its sha256 differs)")
    return None


def listed_damage(listed: dict[str, Any], found: dict[str, dict[str, Any]]) -> Damage | None:
    """The first file a manifest lists (`listed`: its `files`) that the directory's own `record`
    (`found`) does not hold as listed: missing, of another size, or of another sha256."""
    for relative, want in sorted(listed.items()):
        got = found.get(PurePosixPath(relative).as_posix())
        if got is None:
            return Damage(relative, "is missing")
        if got["bytes"] != want["bytes"]:
            return Damage(relative, size_problem(got["bytes"], want["bytes"]))
        if got["sha256"] != want["sha256"]:
            return Damage(relative, "is not the file the snapshot recorded (its sha256 differs)")
    return None


def size_problem(size: int, recorded: int) -> str:
    """A Damage problem: the file has `size` bytes where the snapshot recorded `recorded`."""
    return f"has {_bytes(size)}; the snapshot recorded {_bytes(recorded)}"


def _bytes(count: int) -> str:
    return "1 byte" if count == 1 else f"{count} bytes"


def damage_of(artifacts: Any, snapshot: dict[str, Any], *parts: str, deep: bool = False) -> Damage | None:
    """`damage` of a registered snapshot (its document), read through the artifact store: the
    first damaged file of `parts` ("weights", "trainingState"), in that order."""
    try:
        directory = artifacts.get_dir(snapshot["path"])
    except (KeyError, TypeError, ValueError):  # no path, or one that leaves the store: nothing to read
        return Damage(".", "is not in the artifact store")
    for part in parts:
        found = damage(directory, snapshot.get("contents") or {}, snapshot.get("files"), part=part, deep=deep)
        if found is not None:
            return found
    return None
