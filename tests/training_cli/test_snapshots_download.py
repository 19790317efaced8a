"""`snapshots download ID DIR`: the adapter's tar.gz, extracted safely."""

from __future__ import annotations

import io
import tarfile

import pytest

from tests.training_cli.fake_api import adapter_archive
from training_cli.archive import extract_safely
from training_cli.errors import CliError


def test_download_extracts_the_adapter(training, api, tmp_path):
    api.state["snapshots"]["snap-1"] = {"id": "snap-1"}
    target = tmp_path / "out" / "adapter"
    result = training("snapshots", "download", "snap-1", str(target))
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(target.resolve())
    assert sorted(p.name for p in target.iterdir()) == ["adapter_config.json", "adapter_model.safetensors"]
    assert (target / "adapter_config.json").read_text() == '{"r": 8, "peft_type": "LORA"}'


def test_download_of_a_missing_snapshot(training, tmp_path):
    result = training("snapshots", "download", "snap-nope", str(tmp_path / "x"))
    assert result.exit_code == 1
    assert result.output.strip() == "error: snapshot snap-nope does not exist"


@pytest.mark.parametrize("name", ["../escape.txt", "/abs/escape.txt", "a/../../escape.txt"])
def test_paths_outside_the_folder_are_refused(tmp_path, name):
    archive = tmp_path / "evil.tar.gz"
    archive.write_bytes(adapter_archive({"adapter_config.json": b"{}", name: b"x"}))
    target = tmp_path / "target"
    target.mkdir()
    with pytest.raises(CliError, match="outside its folder"):
        extract_safely(archive, target)
    assert list(target.iterdir()) == []  # nothing is written when any member is bad


def test_links_are_refused(tmp_path):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        link = tarfile.TarInfo("adapter_model.safetensors")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    archive = tmp_path / "link.tar.gz"
    archive.write_bytes(buffer.getvalue())
    with pytest.raises(CliError, match="not a plain file"):
        extract_safely(archive, tmp_path / "t")
