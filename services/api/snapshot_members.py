"""What an imported snapshot directory may hold (issue 26): what its own manifest declares, and no
more than the deployment accepts.

- Every file lies inside a part the manifest declares (`weights.path`, `trainingState.path`: by
  default `adapter/` and `training_state/`; a layout-1 directory is one part, the directory
  itself). A file elsewhere is read by nothing, so it is refused rather than stored.
- A manifest that lists its `files` (every snapshot this release writes) is held to them: a file
  it does not list, or of another size than listed, is refused before a byte of it is written, and
  the import takes at most the bytes listed. A manifest that lists none (release 0.5's layout 1, a
  0.6 snapshot written before manifests listed files) is held to the parts and to
  `limits.maxSnapshotUnpackedBytes`.
- A listing that declares more than `maxSnapshotUnpackedBytes` is a 413 before anything is read.

Files are named relative to the snapshot directory, never by where it lies on the API's machine.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from shared import reasons
from shared.errors import TooLarge, ValidationFailed
from shared.snapshots.files import size_problem
from shared.snapshots.manifest import ADAPTER_DIR, MANIFEST_FILE, TRAINING_STATE_DIR

_DEFAULT_DIRS = {"weights": ADAPTER_DIR, "trainingState": TRAINING_STATE_DIR}


def relative(name: str) -> str:
    """A member's name as one path inside the snapshot directory ("./a//b" -> "a/b"; "" for itself)."""
    text = PurePosixPath(name).as_posix()
    return "" if text == "." else text


def _under(path: str, folder: str) -> bool:
    return folder == "" or path == folder or path.startswith(folder + "/")


class SnapshotMembers:
    """The files one import may write, checked one by one as they come (`admit`)."""

    def __init__(self, manifest: dict[str, Any], *, source: str, field: str, limit_bytes: int,
                 manifest_bytes: int):
        self.source, self.field = source, field
        self.parts = _part_dirs(manifest)
        listed = manifest.get("files")
        self.listed = ({relative(name): int(entry["bytes"]) for name, entry in listed.items()}
                       if isinstance(listed, dict) else None)
        self.limit = limit_bytes
        if self.listed is not None:
            declared = sum(self.listed.values())
            if declared + manifest_bytes > limit_bytes:
                raise TooLarge(reasons.snapshot_archive_declares_too_much(source, declared, limit_bytes),
                               details={"field": field, "maxUnpackedBytes": limit_bytes, "declaredBytes": declared})
        self.taken = manifest_bytes
        self.seen: set[str] = set()

    def admit(self, path: str, size: int) -> None:
        """Raise (ValidationFailed naming the file, or TooLarge) unless the file at `path` (relative
        to the snapshot directory) of `size` bytes belongs to this snapshot."""
        if path in self.seen or path == MANIFEST_FILE:
            self._refuse(reasons.snapshot_archive_twice(self.source, path), path)
        self.seen.add(path)
        if not any(_under(path, folder) for folder in self.parts):
            self._refuse(reasons.snapshot_archive_outside_parts(self.source, path, [f"{d}/" for d in self.parts]), path)
        if self.listed is not None:
            if path not in self.listed:
                self._refuse(reasons.snapshot_archive_unlisted(self.source, path), path)
            if size != self.listed[path]:
                self._refuse(reasons.snapshot_import_damaged(self.source, path, size_problem(size, self.listed[path])),
                             path)
        self.taken += size
        if self.taken > self.limit:
            raise TooLarge(reasons.snapshot_archive_too_large_unpacked(self.source, self.limit),
                           details={"field": self.field, "maxUnpackedBytes": self.limit})

    def _refuse(self, message: str, path: str) -> None:
        raise ValidationFailed(message, details={"field": self.field, "file": path})


def _part_dirs(manifest: dict[str, Any]) -> list[str]:
    """The directories of the parts the manifest declares ("" for the directory itself: layout 1)."""
    if manifest.get("layout") == 1:
        return [""]
    folders = []
    for part, default in _DEFAULT_DIRS.items():
        value = manifest.get(part)
        if isinstance(value, dict):
            folders.append(relative(str(value.get("path") or default)))
    return sorted(set(folders))
