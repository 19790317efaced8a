"""`training datasets create|get|delete` against the real API (tests/cli/conftest.py real_api)."""

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
