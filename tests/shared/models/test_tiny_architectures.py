"""The tiny Llama 3, Gemma 3 and Qwen2.5 models of tests/shared/models/tiny_architectures.py: built the
same twice, each its family's class, tokens, chat template and generation config, and loaded from
the hub cache by catalog entry through the one loading path."""

from __future__ import annotations

import json

import pytest

from shared.models.catalog import Catalog
from shared.models.load_spec import load_spec_for
from shared.models.loading import load_causal_lm, load_tokenizer, model_dir_for
from shared.models.prompts import prompt_token_ids
from shared.store.artifacts import ArtifactRoot
from tests.conftest import make_config
from tests.shared.models.tiny_architectures import ARCHITECTURES, NAMES, QWEN25_SYSTEM, build

CONVERSATION = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Add: 2 + 3"},
                {"role": "assistant", "content": "5"}]
# What each family's own template makes of CONVERSATION (and of its first two messages, with the
# generation prompt), as its instruct model's tokenizer renders it.
RENDERED = {
    "llama3": ("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
               "<|start_header_id|>user<|end_header_id|>\n\nAdd: 2 + 3<|eot_id|>"
               "<|start_header_id|>assistant<|end_header_id|>\n\n5<|eot_id|>"),
    "gemma3": "<bos><start_of_turn>user\nBe brief.\n\nAdd: 2 + 3<end_of_turn>\n<start_of_turn>model\n5<end_of_turn>\n",
    "qwen2.5": ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nAdd: 2 + 3<|im_end|>\n"
                "<|im_start|>assistant\n5<|im_end|>\n"),
}
GENERATION_PROMPTS = {"llama3": "<|start_header_id|>assistant<|end_header_id|>\n\n",
                      "gemma3": "<start_of_turn>model\n", "qwen2.5": "<|im_start|>assistant\n"}
MODEL_TYPES = {"llama3": "llama", "gemma3": "gemma3_text", "qwen2.5": "qwen2"}


@pytest.mark.parametrize("name", NAMES)
def test_two_builds_write_the_same_bytes(name, hub_models, tmp_path):
    first = hub_models.snapshot(name)
    second = build(name, tmp_path / name)
    names = sorted(p.name for p in second.iterdir())
    assert names == sorted(p.name for p in first.iterdir())
    assert {"config.json", "model.safetensors", "tokenizer.json", "generation_config.json"} <= set(names)
    for file in names:
        assert (first / file).read_bytes() == (second / file).read_bytes(), file


@pytest.mark.parametrize("name", NAMES)
def test_each_is_its_familys_model_with_its_familys_tokens(name, hub_models):
    arch = ARCHITECTURES[name]
    directory = hub_models.snapshot(name)
    model, tokenizer = load_causal_lm(directory, "fp32"), load_tokenizer(directory)
    assert type(model).__name__ == arch.model_class
    assert json.loads((directory / "config.json").read_text())["model_type"] == MODEL_TYPES[name]
    assert model.config.tie_word_embeddings is arch.tied
    assert (tokenizer.bos_token, tokenizer.eos_token) == (arch.bos, arch.eos)
    assert tokenizer.pad_token == (arch.pad or arch.eos)  # Llama 3 has none: shared.models.loading pads with eos
    for token in arch.special_tokens:  # each one token, never split into text
        assert tokenizer.convert_ids_to_tokens(tokenizer(token, add_special_tokens=False)["input_ids"]) == [token]
    generation = json.loads((directory / "generation_config.json").read_text())
    assert generation["eos_token_id"] == tokenizer.convert_tokens_to_ids(list(arch.generation_eos))
    assert model.generation_config.eos_token_id == generation["eos_token_id"]
    text = "héllo wörld 世界 ~{}!"
    assert tokenizer.decode(tokenizer(text, add_special_tokens=False)["input_ids"]) == text
    ids = tokenizer(text)["input_ids"]
    assert (ids[0] == tokenizer.bos_token_id) is arch.adds_bos
    if name == "gemma3":  # both kinds of Gemma 3 layer, and a window its prompts cross
        assert model.config.layer_types == ["sliding_attention", "full_attention"]
        assert model.config.sliding_window == 16


@pytest.mark.parametrize("name", NAMES)
def test_the_chat_template_is_the_familys(name, hub_models):
    tokenizer = load_tokenizer(hub_models.snapshot(name))
    assert tokenizer.apply_chat_template(CONVERSATION, tokenize=False) == RENDERED[name]
    prompt = tokenizer.apply_chat_template(CONVERSATION[:2], tokenize=False, add_generation_prompt=True)
    assert prompt.endswith(GENERATION_PROMPTS[name]) and RENDERED[name].startswith(prompt)
    # what every part of the trainer sends the model: the template's tokens, one bos where it has one
    ids = prompt_token_ids(tokenizer, CONVERSATION[:2])
    assert tokenizer.decode(ids) == prompt
    assert ids.count(tokenizer.bos_token_id) == (1 if ARCHITECTURES[name].bos else 0)
    # a text prompt (GRPO's, /v1/completions'): the tokenizer's own bos, where the family adds one
    plain = tokenizer("Add: 2 + 3", add_special_tokens=False)["input_ids"]
    bos = [tokenizer.bos_token_id] if ARCHITECTURES[name].adds_bos else []
    assert prompt_token_ids(tokenizer, "Add: 2 + 3") == bos + plain


def test_qwen25_writes_its_default_system_message_and_gemma3_wants_alternating_turns(hub_models):
    qwen = load_tokenizer(hub_models.snapshot("qwen2.5"))
    assert qwen.apply_chat_template(CONVERSATION[1:], tokenize=False) == (
        f"<|im_start|>system\n{QWEN25_SYSTEM}<|im_end|>\n<|im_start|>user\nAdd: 2 + 3<|im_end|>\n"
        "<|im_start|>assistant\n5<|im_end|>\n")
    gemma = load_tokenizer(hub_models.snapshot("gemma3"))
    with pytest.raises(Exception, match="Conversation roles must alternate"):
        gemma.apply_chat_template([CONVERSATION[1], CONVERSATION[1]], tokenize=False)


def test_catalog_entries_of_the_hub_cache_load_through_the_one_path(hub_models, monkeypatch, redis_url,
                                                                   shared_artifacts):
    monkeypatch.setenv("HF_HUB_CACHE", str(hub_models.cache_dir))
    entries = [hub_models.entry(name) for name in NAMES]
    config = make_config(redis_url, "unused:", shared_artifacts, extra_catalog=entries)
    catalog, artifacts = Catalog(config, ArtifactRoot(shared_artifacts)), ArtifactRoot(shared_artifacts)
    for name, entry in zip(NAMES, entries):
        described = catalog.get(entry["id"])
        assert described["source"] == "hub-cache" and described["precisions"] == ["fp32", "bf16"]
        assert catalog.check_loadable(entry["id"]) == entry
        assert model_dir_for(entry, artifacts) == hub_models.snapshot(name)
        spec = load_spec_for(entry=entry, artifacts=artifacts, served_model_name="tiny")
        assert spec.model_dir == str(hub_models.snapshot(name)) and spec.dtype == "fp32"
        model = load_causal_lm(spec.model_dir, "fp32")
        assert spec.generation_config["eos_token_id"] == model.generation_config.eos_token_id
        assert entry["parameters"] == sum(p.numel() for p in model.parameters())
