"""Artifacts sent as one .tar.gz (a snapshot's adapter, a run's TensorBoard event files): each file
read through the artifact store, under the name it has in the archive."""

from __future__ import annotations

import io
import tarfile

from shared.store.artifacts import ArtifactStore


def tar_gz(artifacts: ArtifactStore, members: list[tuple[str, str]]) -> io.BytesIO:
    """A gzipped tar of (key, name in the archive) pairs, read to its start."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for key, name in members:
            with artifacts.open(key) as f:
                info = tarfile.TarInfo(name)
                info.size, info.mode = f.seek(0, io.SEEK_END), 0o644
                f.seek(0)
                tar.addfile(info, f)
    buffer.seek(0)
    return buffer
