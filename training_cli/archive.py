"""Downloading a snapshot's adapter or a run's TensorBoard event files (a .tar.gz each) and extracting
it without trusting its paths."""

from __future__ import annotations

import tarfile
import tempfile
from pathlib import Path, PurePosixPath

from shared import reasons
from training_cli.client import ApiClient
from training_cli.errors import CliError


def download_adapter(client: ApiClient, snapshot_id: str, target_dir: Path) -> Path:
    """GET /v1/snapshots/ID/adapter and extract it into target_dir; returns target_dir."""
    return download_archive(client, f"/v1/snapshots/{snapshot_id}/adapter", target_dir, what="adapter")


def download_tensorboard(client: ApiClient, run_id: str, target_dir: Path) -> Path:
    """GET /v1/runs/ID/tensorboard and extract it into target_dir/ID (so that `tensorboard --logdir
    target_dir` shows each run downloaded there under its id); returns that folder."""
    return download_archive(client, f"/v1/runs/{run_id}/tensorboard", target_dir / run_id, what="TensorBoard")


def download_archive(client: ApiClient, path: str, target_dir: Path, *, what: str) -> Path:
    target_dir = target_dir.expanduser().resolve()
    with tempfile.TemporaryDirectory(prefix="training-download-") as tmp:
        archive = client.download(path, Path(tmp) / "archive.tar.gz")
        target_dir.mkdir(parents=True, exist_ok=True)  # only once there is something to put in it
        extract_safely(archive, target_dir, what=what)
    return target_dir


def extract_safely(archive: Path, target_dir: Path, *, what: str = "adapter") -> list[Path]:
    """Extract regular files and folders only, each inside target_dir; refuse the whole archive
    if any member is absolute, climbs out with `..`, or is a link or device."""
    target_dir = target_dir.resolve()
    try:
        with tarfile.open(archive, "r:*") as tar:
            members = tar.getmembers()
            for member in members:
                _check(member, target_dir, what)
            written = []
            for member in members:
                if member.isdir():
                    (target_dir / member.name).mkdir(parents=True, exist_ok=True)
                    continue
                out = target_dir / member.name
                out.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                assert source is not None  # regular files always have content
                with source, open(out, "wb") as handle:
                    while chunk := source.read(1 << 20):
                        handle.write(chunk)
                written.append(out)
            return written
    except tarfile.TarError as exc:
        raise CliError(reasons.archive_unreadable(what, reasons.error_text(exc))) from None


def _check(member: tarfile.TarInfo, target_dir: Path, what: str) -> None:
    name = PurePosixPath(member.name)
    if not (member.isfile() or member.isdir()):
        raise CliError(reasons.archive_member_not_plain(what, member.name))
    if name.is_absolute() or ".." in name.parts:
        raise CliError(reasons.archive_member_outside(what, member.name))
    if not (target_dir / member.name).resolve().is_relative_to(target_dir):
        raise CliError(reasons.archive_member_outside(what, member.name))
