"""The API on a full disk (issue 26): the artifact root is a small tmpfs of the test's own
(tests/conftest.small_disk), filled for real. A write that meets it is a 507 with one sentence
(shared/reasons.DISK_FULL), never a 500 nor a 400 that blames the upload; nothing half-written is
left; the same request succeeds once space is freed. And an archive member the manifest does not
list is refused before a byte of it is written: 300 MB of zeros on an 8 MB disk read as unlisted,
not as a full disk."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from dataclasses import replace

import pytest

from services.api.app import create_app
from shared import reasons
from shared.snapshots.files import record
from tests.api.conftest import CHAT_ROWS
from tests.api.test_snapshot_import import MANIFEST, post_archive, snapshot_dir, tar_of
from tests.conftest import fill_disk


@pytest.fixture
def disk(small_disk):
    return small_disk(8)


@pytest.fixture
def on_disk(config, disk):
    return create_app(replace(config, artifact_root=disk)).test_client()


def leftovers(root) -> list[str]:
    """What a write could have left half-done: temporary files and unpacking directories."""
    return sorted(p.name for p in root.rglob("*") if p.name.startswith((".tmp-", ".incoming-")))


def upload(client, headers, rows=CHAT_ROWS):
    return client.post("/v1/datasets", headers=headers, data={"file": (io.BytesIO(rows), "d.jsonl")},
                       content_type="multipart/form-data")


def test_a_dataset_upload_on_a_full_disk_is_a_507_and_succeeds_once_space_is_freed(on_disk, disk, admin):
    filler = fill_disk(disk)
    resp = upload(on_disk, admin)
    assert resp.status_code == 507 and resp.json["error"] == {
        "code": "insufficient_storage", "details": {}, "message": reasons.DISK_FULL}
    assert reasons.DISK_FULL == ("the trainer's disk is full (no space left where it stores artifacts), so nothing "
                                 "was stored; free space there, then send the request again")
    assert leftovers(disk) == [] and on_disk.get("/v1/datasets", headers=admin).json["items"] == []
    filler.unlink()
    assert upload(on_disk, admin).status_code == 201


def test_the_document_declares_the_507_where_a_request_writes_artifacts(on_disk):
    document = on_disk.get("/v1/openapi.json").json
    declared = {(path, method) for path, operations in document["paths"].items()
                for method, operation in operations.items() if "507" in operation["responses"]}
    assert declared == {("/v1/datasets", "post"), ("/v1/snapshots/import", "post"), ("/v1/base-models/import", "post")}
    assert document["components"]["responses"]["InsufficientStorage"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"}


def test_a_snapshot_import_on_a_full_disk_is_a_507_not_a_bad_archive(on_disk, disk, admin, tmp_path):
    archive = tar_of(snapshot_dir(tmp_path), gz=True)
    (disk / "imported").mkdir()
    filler = fill_disk(disk)
    resp = post_archive(on_disk, admin, archive, "application/gzip")
    assert resp.status_code == 507 and resp.json["error"]["message"] == reasons.DISK_FULL
    assert leftovers(disk) == [] and on_disk.get("/v1/snapshots", headers=admin).json["items"] == []
    filler.unlink()
    assert post_archive(on_disk, admin, archive, "application/gzip").status_code == 201


def zeros_member(tar: tarfile.TarFile, name: str, size: int) -> None:
    info = tarfile.TarInfo(name)
    info.size = size

    class Zeros(io.RawIOBase):
        left = size

        def readable(self):
            return True

        def readinto(self, buffer):
            n = min(len(buffer), self.left)
            buffer[:n] = b"\0" * n
            self.left -= n
            return n

    tar.addfile(info, io.BufferedReader(Zeros(), 1 << 20))


def test_a_file_its_manifest_does_not_list_is_refused_before_it_is_written(on_disk, disk, admin, tmp_path):
    """The issue's archive, a valid snapshot plus 300 MB of zeros (a few hundred KB gzipped), on a
    disk of 8 MB: a 400 naming the file. Had any of it been written, the disk would have been full
    long before (a 507)."""
    directory = snapshot_dir(tmp_path)
    (directory / "snapshot.json").write_text(json.dumps({**MANIFEST, "files": record(directory)}))
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=1) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        tar.add(directory / "snapshot.json", arcname="snap/snapshot.json")  # the CLI sends it first
        tar.add(directory / "adapter", arcname="snap/adapter")
        zeros_member(tar, "snap/adapter/zeros.bin", 300 * 1024 * 1024)
    assert len(buffer.getvalue()) < 2_000_000
    print(f"\nthe archive: {len(buffer.getvalue()):,} bytes gzipped, 300 MB of zeros in it")
    resp = post_archive(on_disk, admin, buffer.getvalue(), "application/gzip")
    assert resp.status_code == 400 and resp.json["error"] == {
        "code": "invalid", "details": {"field": "file", "file": "adapter/zeros.bin"},
        "message": reasons.snapshot_archive_unlisted("snap.tar", "adapter/zeros.bin")}
    assert resp.json["error"]["message"] == (
        "snap.tar holds adapter/zeros.bin, which its manifest's files do not list; a snapshot directory holds "
        "the files its manifest lists and no others")
    assert leftovers(disk) == [] and on_disk.get("/v1/snapshots", headers=admin).json["items"] == []
