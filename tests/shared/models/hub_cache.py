"""A fake Hugging Face hub cache: a model directory filed the way `hf download` files it.

    CACHE/models--ORG--NAME/blobs/ID                      each file's content, once
    CACHE/models--ORG--NAME/snapshots/COMMIT/FILE -> ../../blobs/ID   (relative symlinks)
    CACHE/models--ORG--NAME/refs/REVISION                 the commit hash, no newline

How it differs from a real download: blob ids are the sha256 of the content (the hub names a
plain file's blob by its git sha1 and only an LFS file's by sha256; nothing reads the names), the
commit hash is made up, and there is no trees/ listing, so huggingface_hub cannot tell whether the
snapshot is complete (it then trusts the directory, as it does for caches written before trees/).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def fake_commit(seed: str) -> str:
    return hashlib.sha1(seed.encode()).hexdigest()


def add_to_hub_cache(cache_dir: Path, repo_id: str, model_dir: Path, *, revision: str = "main",
                     commit: str | None = None) -> Path:
    """File every file of `model_dir` under `repo_id` at `revision`; returns the snapshot directory."""
    commit = commit or fake_commit(f"{repo_id}@{revision}")
    repo = Path(cache_dir) / ("models--" + repo_id.replace("/", "--"))
    blobs, snapshot = repo / "blobs", repo / "snapshots" / commit
    blobs.mkdir(parents=True, exist_ok=True)
    for source in sorted(p for p in Path(model_dir).rglob("*") if p.is_file()):
        content = source.read_bytes()
        blob = blobs / hashlib.sha256(content).hexdigest()
        blob.write_bytes(content)
        link = snapshot / source.relative_to(model_dir)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    if revision != commit:
        ref = repo / "refs" / revision
        ref.parent.mkdir(parents=True, exist_ok=True)
        ref.write_text(commit)
    return snapshot
