"""`training snapshots import DIR` against the real API (issue 26): the CLI sends the manifest first,
so the API checks every other file against it before writing any. The API's artifact root is an
8 MB tmpfs (tests/conftest.small_disk): a 30 MB file the manifest does not list is refused by name;
had the API written it before reading the manifest, the disk would have been full (a 507)."""

from __future__ import annotations

import json

import pytest

from shared import reasons
from shared.snapshots.files import record
from tests.api.test_snapshot_import import MANIFEST, snapshot_dir
from tests.conftest import make_config


@pytest.fixture
def config(redis_url, key_prefix, small_disk):
    return make_config(redis_url, key_prefix, small_disk(8))


def test_the_cli_sends_the_manifest_first_so_an_unlisted_file_is_never_written(real_training, tmp_path, config):
    directory = snapshot_dir(tmp_path)
    (directory / "snapshot.json").write_text(json.dumps({**MANIFEST, "files": record(directory)}))
    (directory / "adapter" / "zeros.bin").write_bytes(b"\0" * (30 * 1024 * 1024))
    result = real_training("snapshots", "import", str(directory), ok=False)
    assert result.exit_code != 0
    assert reasons.snapshot_archive_unlisted("snap.tar", "adapter/zeros.bin") in " ".join(result.output.split())
    assert not list((config.artifact_root / "imported").iterdir())

    (directory / "adapter" / "zeros.bin").unlink()
    imported = json.loads(real_training("snapshots", "import", str(directory), "-o", "json").output)
    assert imported["files"] == record(directory) and imported["source"] == "upload:snap.tar"
