"""`POST /v1/base-models/import` through the API on model directories written here (a copy of the
built-in tiny Qwen3, changed file by file): the facts come from the model's own files, and what the
engines cannot train or serve is refused with the sentence, leaving nothing behind. A real GGUF
file converted and trained is tests/e2e/test_real_model.py."""

from __future__ import annotations

import io
import json
import shutil

import pytest

from shared import reasons
from shared.models.tiny_models import CHAT_TEMPLATE, builtin_facts, ensure_builtin
from shared.store.artifacts import ArtifactRoot
from tests.api.conftest import CHAT_ROWS

PROMPT_ROWS = b"\n".join(json.dumps({"prompt": f"q{i}", "completion": f"a{i}"}).encode() for i in range(4))


@pytest.fixture
def model_dir(tmp_path, shared_artifacts):
    """A Hugging Face directory of the tiny Qwen3 model, as a user would hand one over."""
    target = tmp_path / "tiny-model"
    shutil.copytree(ensure_builtin("tiny-qwen3", ArtifactRoot(shared_artifacts)), target)
    (target / "trainer_model.json").unlink()
    return target


def import_(client, headers, path, **body):
    return client.post("/v1/base-models/import", headers=headers, json={"path": str(path), **body})


def upload(client, headers, rows):
    resp = client.post("/v1/datasets", headers=headers, data={"file": (io.BytesIO(rows), "d.jsonl")},
                       content_type="multipart/form-data")
    return resp.json["id"]


def sft(client, headers, model, dataset):
    return client.post("/v1/runs", headers=headers, json={
        "method": "sft", "model": model, "dataset": dataset, "hyperparameters": {"maxSteps": 2}})


def test_a_directory_is_imported_with_the_facts_its_files_give(client, admin, model_dir, dataset, config):
    resp = import_(client, admin, model_dir, id="acme/tiny")
    assert resp.status_code == 201, resp.json
    model = resp.json
    spec = builtin_facts("tiny-qwen3")
    assert {k: model[k] for k in ("id", "source", "factsFrom", "architecture", "modality", "parameters")} == {
        "id": "acme/tiny", "source": "imported", "factsFrom": "files", "architecture": "Qwen3ForCausalLM",
        "modality": "text", "parameters": spec["parameters"]}
    assert {k: model[k] for k in ("hiddenSize", "layers", "heads", "kvHeads", "intermediateSize", "vocabSize",
                                  "maxPositions", "tiedEmbeddings")} == {
        "hiddenSize": 64, "layers": 2, "heads": 4, "kvHeads": 2, "intermediateSize": 128, "vocabSize": 512,
        "maxPositions": 2048, "tiedEmbeddings": True}
    assert model["chatTemplate"] == CHAT_TEMPLATE
    assert model["generationConfig"] == spec["generationConfig"]
    assert model["loraTargetModules"] == spec["loraTargetModules"]
    assert model["imported"]["source"] == str(model_dir) and model["imported"]["format"] == "huggingface"

    shown = client.get("/v1/base-models/acme/tiny", headers=admin).json
    assert {k: shown[k] for k in model if k != "imported"} == {k: model[k] for k in model if k != "imported"}
    assert shown["startableRuns"] and "acme/tiny" in [m["id"] for m in client.get("/v1/base-models",
                                                                                    headers=admin).json["items"]]
    assert sft(client, admin, "acme/tiny", dataset).status_code == 201  # chat rows: it has a chat template

    again = import_(client, admin, model_dir, id="acme/tiny")
    assert again.status_code == 409
    assert again.json["error"]["message"] == reasons.model_import_id_taken("acme/tiny")
    taken = import_(client, admin, model_dir, id="builtin/tiny-qwen3")
    assert taken.json["error"]["message"] == reasons.model_import_id_taken("builtin/tiny-qwen3")


def test_without_a_chat_template_chat_rows_are_refused(client, admin, model_dir):
    tokenizer_config = json.loads((model_dir / "tokenizer_config.json").read_text())
    tokenizer_config.pop("chat_template", None)
    (model_dir / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    (model_dir / "chat_template.jinja").unlink(missing_ok=True)
    resp = import_(client, admin, model_dir)
    assert resp.status_code == 201, resp.json
    assert resp.json["id"] == "tiny-model" and resp.json["chatTemplate"] is None
    chat, prompts = upload(client, admin, CHAT_ROWS), upload(client, admin, PROMPT_ROWS)
    sentence = reasons.chat_rows_without_template(model="tiny-model", dataset=chat)
    refused = sft(client, admin, "tiny-model", chat)
    assert refused.status_code == 422 and refused.json["error"]["message"] == sentence
    evaluation = client.post("/v1/evaluations", headers=admin, json={"model": "tiny-model", "dataset": chat})
    assert evaluation.status_code == 422 and evaluation.json["error"]["message"] == sentence
    assert sft(client, admin, "tiny-model", prompts).status_code == 201


def test_an_unknown_architecture_is_refused_and_leaves_nothing(client, admin, model_dir, config):
    config_json = json.loads((model_dir / "config.json").read_text())
    config_json["architectures"] = ["WarpDriveForCausalLM"]
    (model_dir / "config.json").write_text(json.dumps(config_json))
    resp = import_(client, admin, model_dir, id="warp")
    assert resp.status_code == 422
    assert resp.json["error"]["message"] == reasons.model_architecture_unknown("warp", "WarpDriveForCausalLM")
    assert client.get("/v1/base-models/warp", headers=admin).status_code == 404
    assert not (config.artifact_root / "models" / "imported" / "warp").exists()


def test_refusals_name_what_is_wrong(client, admin, team, model_dir, tmp_path):
    assert import_(client, team, model_dir).json["error"]["message"] == reasons.MODEL_IMPORT_ADMIN_ONLY
    relative = import_(client, admin, "tiny-model")
    assert (relative.status_code, relative.json["error"]["message"]) == (
        400, reasons.model_import_path_not_absolute("tiny-model"))
    outside = import_(client, admin, "/etc")
    assert outside.status_code == 400
    assert outside.json["error"]["message"].startswith("path /etc is not inside a model import root")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert import_(client, admin, empty).json["error"]["message"] == reasons.model_import_not_a_model(str(empty))
    bad_id = import_(client, admin, model_dir, id="../up")
    assert (bad_id.status_code, bad_id.json["error"]["message"]) == (400, reasons.model_import_id_invalid("../up", 96))
    (model_dir / "extra.json").symlink_to("/etc/hostname")
    linked = import_(client, admin, model_dir)
    assert linked.json["error"]["message"] == reasons.model_import_path_not_plain(str(model_dir), "extra.json")
    assert client.post("/v1/base-models/import", headers=admin, json={"paths": "x"}).json["error"]["message"] == (
        reasons.MODEL_IMPORT_BODY)
    reserved = import_(client, admin, model_dir, id="import")
    assert reserved.json["error"]["message"] == reasons.model_import_id_invalid("import", 96)
    # the route is the import's alone: not a lookup of a model named "import"
    looked_up = client.get("/v1/base-models/import", headers=admin)
    assert looked_up.status_code == 405 and "GET" not in looked_up.headers["Allow"]


def test_a_file_that_is_no_gguf_model_is_refused_with_the_converters_words(client, admin, tmp_path):
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a gguf file at all")
    resp = import_(client, admin, bogus)
    assert resp.status_code == 422
    assert resp.json["error"]["message"].startswith(
        "GGUF file bogus.gguf could not be converted to a Hugging Face model: ")
    assert client.get("/v1/base-models/bogus", headers=admin).status_code == 404
