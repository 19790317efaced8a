"""`training datasets create|get|delete` against the real API (tests/training_cli/conftest.py real_api)."""

from __future__ import annotations

import json


def test_create_then_delete_a_dataset(real_training, tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("\n".join(json.dumps({"prompt": f"p{i}", "completion": f"c{i}"}) for i in range(3)) + "\n")
    dataset = json.loads(real_training("datasets", "create", str(rows), "-o", "json").output)
    assert dataset["rows"] == 3 and dataset["format"] == "completion"
    assert real_training("datasets", "delete", dataset["id"]).output == f"dataset {dataset['id']}: deleted\n"
    assert dataset["id"] not in real_training("datasets", "get").output
    again = real_training("datasets", "delete", dataset["id"], ok=False)
    assert again.exit_code == 1 and f"dataset {dataset['id']} was deleted at " in again.output


def test_create_with_the_image_files_its_rows_name(real_training, tmp_path):
    from shared.data.images import decode_data_url
    from shared.models.tiny_vision_model import SAMPLE_DATASET

    row = json.loads(SAMPLE_DATASET.read_text().splitlines()[0])
    part = row["messages"][0]["content"][0]
    (tmp_path / "red.png").write_bytes(decode_data_url(part["image_url"]["url"]))
    part["image_url"]["url"] = "red.png"
    rows = tmp_path / "shapes.jsonl"
    rows.write_text(json.dumps(row) + "\n")
    dataset = json.loads(real_training("datasets", "create", str(rows), "--image", str(tmp_path / "red.png"),
                                       "-o", "json").output)
    assert (dataset["rows"], dataset["modality"]) == (1, "image-text")
    missing = real_training("datasets", "create", str(rows), ok=False)  # the file left behind
    assert missing.exit_code == 1 and "must be a data: URL of an image" in missing.output
