"""The artifact root: datasets, models, snapshots and logs on a disk shared by every node.

Everything reads and writes artifacts through this small interface, so an S3-like store can
follow by implementing the same methods.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


class ArtifactRoot:
    def __init__(self, root: Path | str):
        self.root = Path(root).expanduser().resolve()

    def path(self, *parts: str) -> Path:
        return self.root.joinpath(*parts)

    def dataset_path(self, digest: str) -> Path:
        return self.path("datasets", f"{digest}.jsonl")

    def model_dir(self, name: str) -> Path:
        return self.path("models", name)

    def run_dir(self, run_id: str) -> Path:
        return self.path("runs", run_id)

    def snapshot_dir(self, run_id: str, snapshot_id: str) -> Path:
        return self.run_dir(run_id) / "snapshots" / snapshot_id

    def write_bytes_atomic(self, target: Path, data: bytes) -> Path:
        """Write a file so that readers see either nothing or all of it."""
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
        return target

    def publish_dir(self, staging: Path, target: Path) -> Path:
        """Move a fully written directory into place in one rename."""
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
        return target
