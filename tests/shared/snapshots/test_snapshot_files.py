"""A snapshot's recorded files and the checks that find it damaged (shared/snapshots/files.py), on
real directories."""

from __future__ import annotations

import json

from shared.snapshots.files import Damage, damage, record

LAYOUT2 = {"weights": {"format": "peft-safetensors", "path": "adapter"},
           "trainingState": {"format": "hf-trainer", "path": "training_state"}}
LAYOUT1 = {"weights": {"format": "peft-safetensors", "path": "."},
           "trainingState": {"format": "hf-trainer", "path": "."}}


def write_layout2(root):
    (root / "adapter").mkdir(parents=True)
    (root / "training_state").mkdir()
    (root / "adapter" / "adapter_config.json").write_text("{}")
    (root / "adapter" / "adapter_model.safetensors").write_bytes(b"w" * 100)
    (root / "training_state" / "optimizer.pt").write_bytes(b"o" * 50)
    (root / "training_state" / "trainer_state.json").write_text("{}")
    (root / "snapshot.json").write_text(json.dumps({"layout": 2}))
    return root


def test_record_lists_every_file_but_the_manifest_with_size_and_sha256(tmp_path):
    files = record(write_layout2(tmp_path))
    assert list(files) == ["adapter/adapter_config.json", "adapter/adapter_model.safetensors",
                           "training_state/optimizer.pt", "training_state/trainer_state.json"]
    assert files["adapter/adapter_model.safetensors"]["bytes"] == 100
    assert len(files["adapter/adapter_model.safetensors"]["sha256"]) == 64


def test_an_intact_snapshot_has_no_damage(tmp_path):
    files = record(write_layout2(tmp_path))
    for part in ("weights", "trainingState"):
        assert damage(tmp_path, LAYOUT2, files, part=part, deep=True) is None


def test_deleted_truncated_and_altered_files_each_name_the_file(tmp_path):
    files = record(write_layout2(tmp_path))
    weights = tmp_path / "adapter" / "adapter_model.safetensors"

    weights.write_bytes(b"x" * 100)  # same size, other bytes: only the deep check sees it
    assert damage(tmp_path, LAYOUT2, files, part="weights") is None
    assert damage(tmp_path, LAYOUT2, files, part="weights", deep=True) == Damage(
        "adapter/adapter_model.safetensors", "is not the file the snapshot recorded (its sha256 differs)")

    weights.write_bytes(b"w" * 10)
    assert damage(tmp_path, LAYOUT2, files, part="weights") == Damage(
        "adapter/adapter_model.safetensors", "has 10 bytes; the snapshot recorded 100 bytes")

    weights.unlink()
    assert damage(tmp_path, LAYOUT2, files, part="weights") == Damage("adapter/adapter_model.safetensors", "is missing")
    assert damage(tmp_path, LAYOUT2, files, part="trainingState") is None  # the other part is intact

    (tmp_path / "training_state" / "optimizer.pt").write_bytes(b"")
    assert damage(tmp_path, LAYOUT2, files, part="trainingState") == Damage(
        "training_state/optimizer.pt", "has 0 bytes; the snapshot recorded 50 bytes")


def test_a_symlink_in_place_of_a_file_counts_as_missing(tmp_path):
    files = record(write_layout2(tmp_path))
    weights = tmp_path / "adapter" / "adapter_model.safetensors"
    secret = tmp_path / "secret"
    secret.write_bytes(weights.read_bytes())
    weights.unlink()
    weights.symlink_to(secret)
    assert damage(tmp_path, LAYOUT2, files, part="weights", deep=True) == Damage(
        "adapter/adapter_model.safetensors", "is missing")


def test_without_a_record_the_files_a_part_needs_must_be_there_and_not_empty(tmp_path):
    write_layout2(tmp_path)
    assert damage(tmp_path, LAYOUT2, None, part="weights", deep=True) is None
    (tmp_path / "adapter" / "adapter_model.safetensors").write_bytes(b"")
    assert damage(tmp_path, LAYOUT2, None, part="weights") == Damage("adapter/adapter_model.safetensors", "is empty")
    (tmp_path / "adapter" / "adapter_config.json").unlink()
    assert damage(tmp_path, LAYOUT2, None, part="weights") == Damage("adapter/adapter_config.json", "is missing")


def test_layout1_keeps_both_parts_in_one_directory(tmp_path):
    (tmp_path / "adapter_config.json").write_text("{}")
    (tmp_path / "adapter_model.safetensors").write_bytes(b"w" * 20)
    (tmp_path / "optimizer.pt").write_bytes(b"o" * 20)
    files = record(tmp_path)
    assert damage(tmp_path, LAYOUT1, files, part="weights", deep=True) is None
    (tmp_path / "optimizer.pt").write_bytes(b"o")
    assert damage(tmp_path, LAYOUT1, files, part="weights", deep=True) is None  # weights do not need the optimizer
    assert damage(tmp_path, LAYOUT1, files, part="trainingState") == Damage(
        "optimizer.pt", "has 1 byte; the snapshot recorded 20 bytes")


def test_a_part_the_manifest_names_but_no_file_holds_is_damaged(tmp_path):
    write_layout2(tmp_path)
    for name in ("optimizer.pt", "trainer_state.json"):
        (tmp_path / "training_state" / name).unlink()
    files = record(tmp_path)
    assert damage(tmp_path, LAYOUT2, files, part="trainingState") == Damage(
        "training_state", "holds no files of its trainingState")
    assert damage(tmp_path, LAYOUT2, files, part="weights") is None
