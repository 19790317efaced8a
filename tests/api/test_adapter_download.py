"""`GET /v1/snapshots/ID/adapter` (issue 30): the downloaded adapter_config.json names the base model
by its catalog id, not the worker's local directory, and the adapter still loads with
`PeftModel.from_pretrained` over the base; the stored file (its recorded sha256) is untouched. A
real PEFT adapter of the built-in tiny model, filed as a worker's reporter files a snapshot."""

from __future__ import annotations

import io
import json
import tarfile

import pytest

from services.api.archives import portable_adapter_config
from shared.models.tiny_models import ensure_builtin
from shared.snapshots.files import record
from tests.shared.serving.serving import make_adapter


@pytest.fixture
def tuned(app, tmp_path):
    """(snapshot id, its directory, the base model's directory)."""
    context = app.extensions["trainer"]
    model_dir = ensure_builtin("tiny-qwen3", context.artifacts)
    directory = context.artifacts.root / "runs" / "run-a" / "snapshots" / "step-5"
    make_adapter(model_dir, directory / "adapter", seed=1)
    doc = context.store.create({
        "id": "snap-portable", "kind": "snapshot", "run": None, "workload": "runs", "step": 5, "layout": 2,
        "gpus": 1, "method": "sft", "engine": "sft-single", "precision": "fp32", "model": "builtin/tiny-qwen3",
        "contents": {"weights": {"format": "peft-safetensors", "path": "adapter"}, "trainingState": None},
        "files": record(directory), "final": True, "path": "runs/run-a/snapshots/step-5", "detail": None})
    return doc["id"], directory, model_dir


def test_the_download_names_the_catalog_id_and_loads_over_the_base(client, admin, tuned, tmp_path):
    import torch
    from peft import PeftModel

    from shared.models.loading import load_causal_lm

    snap_id, directory, model_dir = tuned
    stored = (directory / "adapter" / "adapter_config.json").read_bytes()
    assert json.loads(stored)["base_model_name_or_path"] == str(model_dir)  # what PEFT wrote: a server path
    download = client.get(f"/v1/snapshots/{snap_id}/adapter", headers=admin)
    assert download.status_code == 200
    out = tmp_path / "downloaded"
    with tarfile.open(fileobj=io.BytesIO(download.data), mode="r:gz") as tar:
        tar.extractall(out, filter="data")
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == "builtin/tiny-qwen3"
    assert {k: v for k, v in config.items() if k != "base_model_name_or_path"} == {
        k: v for k, v in json.loads(stored).items() if k != "base_model_name_or_path"}
    assert (directory / "adapter" / "adapter_config.json").read_bytes() == stored  # the stored file is as recorded
    assert client.get(f"/v1/snapshots/{snap_id}", headers=admin).json["damaged"] == {"weights": None,
                                                                                    "trainingState": None}

    loaded = PeftModel.from_pretrained(load_causal_lm(model_dir, "fp32"), str(out))
    reference = PeftModel.from_pretrained(load_causal_lm(model_dir, "fp32"), str(directory / "adapter"))
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    with torch.no_grad():
        assert torch.equal(loaded(input_ids=ids).logits, reference(input_ids=ids).logits)


def test_a_config_without_a_base_model_or_not_json_is_sent_as_stored():
    assert portable_adapter_config(b'{"r": 8}', "builtin/tiny-qwen3") is None
    assert portable_adapter_config(b"not json", "builtin/tiny-qwen3") is None
    assert portable_adapter_config(b'{"base_model_name_or_path": "/srv/m"}', None) is None
    assert json.loads(portable_adapter_config(b'{"base_model_name_or_path": "/srv/m", "r": 8}', "Qwen/Qwen3-8B")) == {
        "base_model_name_or_path": "Qwen/Qwen3-8B", "r": 8}
