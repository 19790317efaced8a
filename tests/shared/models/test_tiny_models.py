"""Built-in tiny models: offline, deterministic, loadable through the one model-load path."""

from __future__ import annotations

import json
import threading

import pytest
import torch
from safetensors.torch import load_file

from shared.errors import NotFound, ValidationFailed
from shared.models.loading import load_causal_lm, load_tokenizer, model_dir_for
from shared.models.tiny_models import BUILTIN_MODELS, METADATA_FILE, builtin_facts, builtin_metadata, ensure_builtin
from shared.store.artifacts import ArtifactRoot


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    artifacts = ArtifactRoot(tmp_path_factory.mktemp("artifacts"))
    return artifacts, ensure_builtin("tiny-qwen3", artifacts)


def test_two_builds_are_identical(built, tmp_path):
    _, first = built
    second = ensure_builtin("tiny-qwen3", ArtifactRoot(tmp_path))
    names = sorted(p.name for p in first.iterdir())
    assert names == sorted(p.name for p in second.iterdir())
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    a, b = load_file(first / "model.safetensors"), load_file(second / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_layout_and_metadata(built):
    artifacts, directory = built
    assert directory == artifacts.model_dir("tiny-qwen3")
    for name in ("config.json", "model.safetensors", "tokenizer.json", "generation_config.json", METADATA_FILE):
        assert (directory / name).is_file(), name
    meta = builtin_metadata("tiny-qwen3", artifacts)
    assert meta == json.loads((directory / METADATA_FILE).read_text())
    model = load_causal_lm(directory, "fp32")
    assert meta["parameters"] == sum(p.numel() for p in model.parameters())
    assert meta["precisions"] == ["fp32", "bf16"] and meta["gpuCounts"] == [1, 2] and meta["modality"] == "text"
    assert "q_proj" in meta["loraTargetModules"] and "down_proj" in meta["loraTargetModules"]
    assert meta["generationConfig"]["max_new_tokens"] == 64
    assert type(model).__name__ == "Qwen3ForCausalLM" and model.config.tie_word_embeddings


@pytest.mark.parametrize("name", sorted(BUILTIN_MODELS))
def test_the_facts_the_api_shows_without_a_build_are_those_of_the_built_model(name, built, tmp_path):
    """The API describes a built-in model from its spec alone (no torch, no build); the build checks
    its model against the same facts and writes them, generation config included."""
    artifacts = built[0] if name == "tiny-qwen3" else ArtifactRoot(tmp_path)
    directory = ensure_builtin(name, artifacts)
    assert builtin_facts(name) == json.loads((directory / METADATA_FILE).read_text())
    generation = json.loads((directory / "generation_config.json").read_text())
    assert {k: v for k, v in generation.items() if k != "transformers_version"} == builtin_facts(name)["generationConfig"]


def test_tokenizer_chat_template_and_any_text(built):
    _, directory = built
    tokenizer = load_tokenizer(directory)
    chat = [{"role": "user", "content": "Reverse: abc"}, {"role": "assistant", "content": "cba"}]
    assert tokenizer.apply_chat_template(chat, tokenize=False) == (
        "<|im_start|>user\nReverse: abc<|im_end|>\n<|im_start|>assistant\ncba<|im_end|>\n"
    )
    prompt = tokenizer.apply_chat_template(chat[:1], tokenize=False, add_generation_prompt=True)
    assert prompt.endswith("<|im_end|>\n<|im_start|>assistant\n")
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token == "<|endoftext|>"
    assert len(tokenizer) <= 512
    text = "héllo wörld 世界 ~{}!"
    assert tokenizer.decode(tokenizer(text)["input_ids"]) == text


def test_generate_stops_within_budget(built):
    _, directory = built
    tokenizer, model = load_tokenizer(directory), load_causal_lm(directory, "fp32")
    ids = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Add: 1 + 2"}], add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    out = model.generate(**ids, max_new_tokens=8)
    assert 0 < out.shape[1] - ids["input_ids"].shape[1] <= 8


def test_bf16_load(built):
    _, directory = built
    assert next(load_causal_lm(directory, "bf16").parameters()).dtype == torch.bfloat16


def test_ensure_builtin_reuses_a_complete_build(built):
    artifacts, directory = built
    before = (directory / "model.safetensors").stat().st_mtime_ns
    assert ensure_builtin("tiny-qwen3", artifacts) == directory
    assert (directory / "model.safetensors").stat().st_mtime_ns == before


def test_concurrent_builds_publish_one_directory(tmp_path):
    artifacts = ArtifactRoot(tmp_path)
    results, errors = [], []

    def build():
        try:
            results.append(ensure_builtin("tiny-qwen3", artifacts))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=build) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(results)) == 1
    assert [p.name for p in (tmp_path / "models").iterdir() if not p.name.startswith(".")] == ["tiny-qwen3"]
    assert not [p for p in (tmp_path / "models").iterdir() if "-build-" in p.name]


def test_unknown_builtin(tmp_path):
    with pytest.raises(NotFound, match="there is no built-in model tiny-nothing"):
        ensure_builtin("tiny-nothing", ArtifactRoot(tmp_path))


def test_model_dir_for(built, tmp_path):
    artifacts, directory = built
    assert model_dir_for({"id": "builtin/tiny-qwen3", "builtin": "tiny-qwen3"}, artifacts) == directory
    assert model_dir_for({"id": "Qwen/Qwen3-8B", "path": str(directory)}, artifacts) == directory
    with pytest.raises(ValidationFailed, match=f"points at {tmp_path}, which holds no config.json"):
        model_dir_for({"id": "Qwen/Qwen3-8B", "path": str(tmp_path)}, artifacts)


def test_two_builds_of_the_quickstart_model_are_identical(tmp_path):
    first = ensure_builtin("small-qwen3", ArtifactRoot(tmp_path / "a"))
    second = ensure_builtin("small-qwen3", ArtifactRoot(tmp_path / "b"))
    for name in sorted(p.name for p in first.iterdir()):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_the_quickstart_model_spells_every_word_out_byte_by_byte(tmp_path):
    """small-qwen3's tokenizer has no merges: "stone" is five tokens whatever the training data, so
    reversing a word is a task over tokens the adapter can learn once for every word."""
    directory = ensure_builtin("small-qwen3", ArtifactRoot(tmp_path))
    tokenizer = load_tokenizer(directory)
    assert len(tokenizer) == BUILTIN_MODELS["small-qwen3"].vocab_size == 3 + 256
    ids = tokenizer("Reverse: stone")["input_ids"]
    assert tokenizer.convert_ids_to_tokens(ids) == [*"Reverse:", "Ġ", *"stone"]
    assert [tokenizer.convert_tokens_to_ids(t) for t in ("<|endoftext|>", "<|im_start|>", "<|im_end|>")] == [0, 1, 2]
    chat = [{"role": "user", "content": "Reverse: abc"}, {"role": "assistant", "content": "cba"}]
    assert tokenizer.apply_chat_template(chat, tokenize=False) == (
        "<|im_start|>user\nReverse: abc<|im_end|>\n<|im_start|>assistant\ncba<|im_end|>\n"
    )
    text = "héllo wörld 世界 ~{}!"
    assert len(tokenizer(text)["input_ids"]) == len(text.encode()) and tokenizer.decode(tokenizer(text)["input_ids"]) == text
    model = load_causal_lm(directory, "fp32")
    assert sum(p.numel() for p in model.parameters()) == builtin_facts("small-qwen3")["parameters"]


def test_the_bundled_samples_are_what_their_generator_writes_and_the_held_out_words_are_unseen():
    from shared.data import make_sample

    assert make_sample.TARGET.read_text() == make_sample.render(make_sample.make_rows())
    training, held_out = make_sample.make_reverse_rows()
    assert make_sample.REVERSE_TARGET.read_text() == make_sample.render(training)
    assert make_sample.REVERSE_HELD_OUT_TARGET.read_text() == make_sample.render(held_out)

    def words(rows):
        return {row["messages"][0]["content"].removeprefix("Reverse: ") for row in rows}

    assert len(training) == 4000 and len(held_out) == 100 and not words(training) & words(held_out)
    assert all(row["messages"][1]["content"] == row["messages"][0]["content"][len("Reverse: "):][::-1]
               for row in training + held_out)
