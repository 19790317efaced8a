"""The artifact store: datasets, models, snapshots, evaluation results and serving logs, shared by
every node (SPEC 1).

Every service reads and writes artifacts through `ArtifactStore`, a small interface over **keys**
(relative POSIX paths such as `runs/RUN/snapshots/step-000010`): put a directory, get a
directory, put a file, open a file for reading, list, delete. `ArtifactRoot` implements it on a
local disk (a volume every node mounts); an S3-like store implements the same methods, keeping
`get_dir` / `get_file` as local copies in a cache, since libraries (transformers, peft) load models
and adapters from local paths.

What a process writes as it runs (a trainer's checkpoints, a serving process's log, rollout
adapters) goes to `scratch(key)`, a local working directory of the node; what others must read is
then published with `put_dir` / `put_file`. On a local disk the scratch directory is the key's own
place, so a serving log is readable at its key while it grows; an S3-like store ships it instead.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Protocol

from shared.private_files import FILE_MODE, make_private, private_dirs


class ArtifactStore(Protocol):
    def put_dir(self, source: Path, key: str, *, move: bool = False) -> str:
        """Publish a fully written local directory under `key`, replacing what was there: a reader
        finds the old directory, none for an instant, or all of the new one, never a part of one.
        `move` consumes `source`."""

    def get_dir(self, key: str) -> Path:
        """A local directory holding what `key` holds (read it, do not change it)."""

    def put_file(self, key: str, data: bytes | BinaryIO) -> str:
        """Write one file (bytes, or a stream read to its end) at `key`, atomically."""

    def get_file(self, key: str) -> Path:
        """A local path of the file at `key` (read it, do not change it)."""

    def open(self, key: str) -> BinaryIO:
        """The file at `key`, opened for reading (FileNotFoundError when there is none)."""

    def exists(self, key: str) -> bool:
        """Whether a file or a directory is stored at `key`."""

    def list(self, prefix: str) -> list[str]:
        """The keys of the files under `prefix`, sorted."""

    def delete(self, key: str) -> None:
        """Remove the file or the directory at `key`; nothing when there is none."""

    def scratch(self, key: str) -> Path:
        """A local working directory of this node for `key`'s files while a process writes them."""


# --- Where each artifact lives: the one place keys are named

def dataset_key(digest: str) -> str:
    return f"datasets/{digest}.jsonl"


def model_key(name: str) -> str:
    return f"models/{name}"


def run_key(run_id: str) -> str:
    return f"runs/{run_id}"


def snapshot_key(run_id: str, step: int) -> str:
    return f"{run_key(run_id)}/snapshots/step-{step:06d}"


def run_work_key(run_id: str, attempt: int = 0) -> str:
    """The scratch of one attempt of a run (HF checkpoints, snapshots being put together):
    `runs/RUN`, and `runs/RUN/attempt-N` once re-queued, so that a stale holder still saving on a
    shared artifact root never writes into the files its run's new holder is saving."""
    return run_key(run_id) if attempt <= 0 else f"{run_key(run_id)}/attempt-{attempt}"


def run_snapshots_key(run_id: str, attempt: int = 0) -> str:
    """Where one attempt of a run publishes its snapshots: `runs/RUN/snapshots`, and after its
    worker was lost and it was re-queued (`attempts` N >= 1), `runs/RUN/snapshots/attempt-N`. Each
    holder of a run publishes under keys of its own, so a stale holder that wakes mid-save after
    the run moved can never replace a snapshot the new holder registered (its registration is
    refused by the fence, services/trainer_worker/fenced_snapshots.py)."""
    base = f"{run_key(run_id)}/snapshots"
    return base if attempt <= 0 else f"{base}/attempt-{attempt}"


def tensorboard_key(run_id: str) -> str:
    """The run's TensorBoard event files (one file per attempt of the run)."""
    return f"{run_key(run_id)}/tensorboard"


def process_log_key(run_id: str, started: str | None = None) -> str:
    """A run's process logs (issue 30): one file per worker process that trained it, named by when
    it started (`started`: a UTC stamp, so the names sort in time); without it, their folder."""
    folder = f"{run_key(run_id)}/process-log"
    return folder if started is None else f"{folder}/{started}.log"


def wandb_key(run_id: str) -> str:
    """Where W&B writes an offline run of it (`wandb sync` uploads it later)."""
    return f"{run_key(run_id)}/wandb"


def imported_snapshot_key(snapshot_id: str) -> str:
    return f"imported/{snapshot_id}"


def evaluation_rows_key(evaluation_id: str) -> str:
    return f"evaluations/{evaluation_id}/rows.jsonl"


def endpoint_key(endpoint_id: str) -> str:
    return f"endpoints/{endpoint_id}"


def join(key: str, *parts: str) -> str:
    return str(PurePosixPath(key, *parts))


class UnsafeKey(ValueError):
    """A key that is absolute or climbs out of the store (`..`)."""


class ArtifactRoot:
    """`ArtifactStore` on a local disk (or a volume every node mounts) under `root`."""

    def __init__(self, root: Path | str):
        self.root = Path(root).expanduser().resolve()

    def path(self, key: str, *parts: str) -> Path:
        """The local path of a key. Refuses keys that would leave the root, symlinks included."""
        relative = PurePosixPath(str(key).replace("\\", "/"), *parts)
        if relative.is_absolute() or ".." in relative.parts:
            raise UnsafeKey(f"artifact key {key} is not a relative path inside the store")
        target = self.root.joinpath(*relative.parts)
        if not target.resolve().is_relative_to(self.root):
            raise UnsafeKey(f"artifact key {key} leads outside the store")
        return target

    def key(self, path: Path) -> str:
        """The key of a local path inside the root."""
        return Path(path).resolve().relative_to(self.root).as_posix()

    # --- ArtifactStore
    def put_dir(self, source: Path, key: str, *, move: bool = False) -> str:
        """Publish a folder at `key`, whole at once (a rename), readable by this user only: files
        0600 and folders 0700 whatever modes the source had (shared/private_files.py)."""
        target = self.path(key)
        private_dirs(target.parent)
        staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}-"))
        try:
            if move:
                try:
                    os.replace(source, staging)  # one rename on the same filesystem
                except OSError:  # another filesystem: copy, then drop the source
                    shutil.rmtree(staging)
                    shutil.copytree(source, staging)
                    shutil.rmtree(source)
            else:
                shutil.rmtree(staging)
                shutil.copytree(source, staging, symlinks=False)
            make_private(staging)
            old = None
            if target.exists():  # renamed away whole, then dropped: never deleted file by file in place
                old = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}-old-"))
                os.replace(target, old / "x")
            os.replace(staging, target)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return key

    def get_dir(self, key: str) -> Path:
        return self.path(key)

    def put_file(self, key: str, data: bytes | BinaryIO) -> str:
        """Write a file at `key`, whole at once (a rename), readable by this user only (0600)."""
        target = self.path(key)
        private_dirs(target.parent)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                if isinstance(data, (bytes, bytearray)):
                    fh.write(data)
                else:
                    shutil.copyfileobj(data, fh)
            os.chmod(tmp, FILE_MODE)  # mkstemp's own mode, said here so that no change of it loosens it
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return key

    def get_file(self, key: str) -> Path:
        return self.path(key)

    def open(self, key: str) -> BinaryIO:
        return self.path(key).open("rb")

    def exists(self, key: str) -> bool:
        return self.path(key).exists()

    def list(self, prefix: str) -> list[str]:
        base = self.path(prefix)
        if base.is_file():
            return [prefix]
        if not base.is_dir():
            return []
        return sorted(self.key(p) for p in base.rglob("*") if p.is_file() and not p.is_symlink())

    def delete(self, key: str) -> None:
        target = self.path(key)
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target, ignore_errors=True)
        else:
            target.unlink(missing_ok=True)

    def scratch(self, key: str) -> Path:
        return private_dirs(self.path(key))

    # --- shorthands any store has: local copies of the artifacts most code reads
    def dataset_path(self, digest: str) -> Path:
        return self.get_file(dataset_key(digest))

    def model_dir(self, name: str) -> Path:
        return self.get_dir(model_key(name))
