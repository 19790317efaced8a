"""A real model's facts come from its own files (shared/models/facts.py), the same way for a `path:`
entry, a hub-cache entry and an imported model, and the memory estimate reads the shape they give
instead of guessing it from the parameter count."""

from __future__ import annotations

import json
import shutil
import struct

import pytest

from shared import reasons
from shared.errors import Unprocessable
from shared.models.catalog import Catalog
from shared.models.facts import ModelRefused, read_model_facts, refusal, refuse_unusable
from shared.models.tiny_models import CHAT_TEMPLATE, builtin_facts, ensure_builtin
from shared.planning.resolver import model_shape
from shared.store.artifacts import ArtifactRoot
from tests.conftest import make_config
from tests.shared.models.hub_cache import add_to_hub_cache

# SmolLM2-135M-Instruct's config.json, as its GGUF file converts to (the keys the facts read)
SMOLLM2_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 576,
                  "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3,
                  "intermediate_size": 1536, "vocab_size": 49152, "max_position_embeddings": 8192,
                  "tie_word_embeddings": True}


def safetensors_header_only(path, tensors: dict[str, list[int]]) -> None:
    """A safetensors file whose header declares `tensors` (name -> shape), with zeroed data."""
    header, offset = {}, 0
    for name, shape in tensors.items():
        size = 4
        for dim in shape:
            size *= dim
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    encoded = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + bytes(offset))


@pytest.fixture
def tiny_dir(tmp_path, shared_artifacts):
    target = tmp_path / "tiny"
    shutil.copytree(ensure_builtin("tiny-qwen3", ArtifactRoot(shared_artifacts)), target)
    return target


def test_the_built_in_models_files_say_what_its_spec_says(tiny_dir):
    facts, spec = read_model_facts(tiny_dir, model="tiny"), builtin_facts("tiny-qwen3")
    for key in ("architecture", "parameters", "loraTargetModules", "generationConfig", "hiddenSize", "layers",
                "heads", "kvHeads", "intermediateSize", "vocabSize", "maxPositions", "tiedEmbeddings"):
        assert facts[key] == spec[key], key
    assert facts["chatTemplate"] == CHAT_TEMPLATE and facts["modality"] == "text" and refusal(facts, model="t") is None


def test_weights_give_parameters_targets_and_an_untied_head(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({**SMOLLM2_CONFIG, "hidden_size": 8, "vocab_size": 10,
                                                      "num_hidden_layers": 1}))
    safetensors_header_only(tmp_path / "model.safetensors", {
        "model.embed_tokens.weight": [10, 8], "lm_head.weight": [10, 8],
        "model.layers.0.self_attn.q_proj.weight": [8, 8], "model.layers.0.mlp.down_proj.weight": [8, 4],
        "model.layers.0.input_layernorm.weight": [8], "model.layers.0.self_attn.q_proj.bias": [8],
        "model.layers.0.mlp.experts_gate.weight": [4, 8]})
    facts = read_model_facts(tmp_path, model="m")
    assert facts["parameters"] == 80 + 80 + 64 + 32 + 8 + 8 + 32
    assert facts["tiedEmbeddings"] is False  # it has an lm_head of its own
    assert facts["loraTargetModules"] == ["q_proj", "down_proj", "experts_gate"]
    assert facts["chatTemplate"] is None and facts["generationConfig"] == {}


def test_a_path_entry_reads_the_real_shape_and_the_estimate_uses_it(tmp_path, redis_url, key_prefix, shared_artifacts):
    """The bug this replaced: 135M parameters guessed hidden 1128, 9 layers, vocab 36096."""
    (tmp_path / "config.json").write_text(json.dumps(SMOLLM2_CONFIG))
    entry = {"id": "HuggingFaceTB/SmolLM2-135M-Instruct", "path": str(tmp_path), "parameters": 134_515_008}
    guessed = model_shape({"parameters": entry["parameters"]})
    assert guessed == (1128, 9, 36096)
    catalog = Catalog(make_config(redis_url, key_prefix, shared_artifacts, extra_catalog=[entry]),
                      ArtifactRoot(shared_artifacts))
    model = catalog.get(entry["id"])
    assert model["factsFrom"] == "files" and model["architecture"] == "LlamaForCausalLM"
    assert (model["heads"], model["kvHeads"], model["intermediateSize"], model["maxPositions"]) == (9, 3, 1536, 8192)
    assert model_shape(model) == (576, 30, 49152)
    assert model["parameters"] == 134_515_008  # declared: no weights here to count
    assert refusal(model, model=entry["id"]) is None
    # without weights to count and no count declared, it is refused for work, with the sentence
    undeclared = {**model, "parameters": read_model_facts(tmp_path, model=entry["id"])["parameters"]}
    assert refusal(undeclared, model=entry["id"]) == reasons.model_without_safetensors(entry["id"])


def test_a_hub_cache_entry_reads_the_same_facts(tiny_dir, tmp_path, monkeypatch, redis_url, key_prefix,
                                                shared_artifacts):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    add_to_hub_cache(tmp_path / "hub", "tiny-org/tiny", tiny_dir)
    config = make_config(redis_url, key_prefix, shared_artifacts,
                         extra_catalog=[{"id": "tiny-org/tiny"}, {"id": "local/tiny", "path": str(tiny_dir)}])
    catalog = Catalog(config, ArtifactRoot(shared_artifacts))
    hub, local = catalog.get("tiny-org/tiny"), catalog.get("local/tiny")
    assert hub["source"] == "hub-cache" and local["source"] == f"path:{tiny_dir}"
    assert {k: v for k, v in hub.items() if k not in ("id", "source")} == {
        k: v for k, v in local.items() if k not in ("id", "source")}
    assert hub["hiddenSize"] == 64 and hub["factsFrom"] == "files"


def test_what_cannot_be_trained_is_refused_with_a_sentence(tiny_dir):
    config = json.loads((tiny_dir / "config.json").read_text())
    (tiny_dir / "config.json").write_text(json.dumps({**config, "architectures": ["TimeMachineForCausalLM"]}))
    facts = {**read_model_facts(tiny_dir, model="m"), "id": "m", "factsFrom": "files"}
    assert refusal(facts, model="m") == reasons.model_architecture_unknown("m", "TimeMachineForCausalLM")
    with pytest.raises(Unprocessable) as refused:
        refuse_unusable(facts)
    assert refused.value.message == reasons.model_architecture_unknown("m", "TimeMachineForCausalLM")
    (tiny_dir / "config.json").write_text(json.dumps({k: v for k, v in config.items() if k != "architectures"}))
    assert refusal(read_model_facts(tiny_dir, model="m"), model="m") == reasons.model_without_architecture("m")
    (tiny_dir / "config.json").write_text("{not json")
    with pytest.raises(ModelRefused) as unreadable:
        read_model_facts(tiny_dir, model="m")
    assert str(unreadable.value) == reasons.model_file_not_json("config.json")
    (tiny_dir / "config.json").unlink()
    with pytest.raises(ModelRefused) as missing:
        read_model_facts(tiny_dir, model="m")
    assert str(missing.value) == reasons.model_without_config("m")


def test_chat_rows_need_a_chat_template_unless_the_files_were_not_read():
    model = {"id": "m", "architecture": "LlamaForCausalLM", "hiddenSize": 8, "layers": 1, "heads": 1,
             "vocabSize": 10, "parameters": 100, "chatTemplate": None, "factsFrom": "files"}
    with pytest.raises(Unprocessable) as refused:
        refuse_unusable(model, dataset="ds-1", dataset_format="chat")
    assert refused.value.message == reasons.chat_rows_without_template(model="m", dataset="ds-1")
    refuse_unusable(model, dataset="ds-1", dataset_format="completion")  # prompt and completion rows: fine
    refuse_unusable({**model, "factsFrom": "catalog entry"}, dataset="ds-1", dataset_format="chat")
