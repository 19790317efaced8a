"""The shared model-load spec: one declaration of how a model loads, for endpoints and evaluations."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from shared.artifacts import ArtifactRoot
from shared.errors import ValidationFailed
from shared.load_spec import (DEFAULT_MAX_TOKENS, LoadSpec, config_max_context, default_max_tokens,
                               generation_defaults, load_model, load_spec_for, model_max_context, sampling_defaults)
from shared.tiny_models import ensure_builtin

TINY = {"id": "builtin/tiny-qwen3", "builtin": "tiny-qwen3"}


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> ArtifactRoot:
    artifacts = ArtifactRoot(tmp_path_factory.mktemp("artifacts"))
    ensure_builtin("tiny-qwen3", artifacts)
    return artifacts


@pytest.fixture(scope="module")
def spec(artifacts) -> LoadSpec:
    return load_spec_for(entry=TINY, artifacts=artifacts, served_model_name="tiny")


def test_defaults_on_cpu(spec, artifacts):
    assert spec.model == "builtin/tiny-qwen3" and spec.model_dir == str(artifacts.model_dir("tiny-qwen3"))
    assert (spec.dtype, spec.device, spec.batch_invariant, spec.adapters) == ("fp32", "cpu", True, {})
    # the model's own generation_config.json, without the file's bookkeeping
    assert spec.generation_config == {"bos_token_id": 0, "do_sample": False, "eos_token_id": [2, 0],
                                      "max_new_tokens": 64, "pad_token_id": 0}


def test_bf16_on_cuda_where_supported(artifacts, tmp_path):
    assert load_spec_for(entry=TINY, artifacts=artifacts, served_model_name="t", device="cuda").dtype == "bf16"
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    (real_dir / "config.json").write_text("{}")
    fp16_only = {"id": "x/y", "path": str(real_dir), "precisions": ["fp16", "fp32"], "generationConfig": {"temperature": 0.6}}
    real = load_spec_for(entry=fp16_only, artifacts=artifacts, served_model_name="y", device="cuda")
    assert real.dtype == "fp16" and real.generation_config == {"temperature": 0.6}


def test_a_precision_the_model_lacks_is_refused(artifacts):
    with pytest.raises(ValidationFailed, match="does not support precision fp16; it supports fp32, bf16"):
        load_spec_for(entry=TINY, artifacts=artifacts, precision="fp16", served_model_name="t")


def test_camel_case_round_trip(spec, tmp_path):
    with_adapter = dataclasses.replace(spec, adapters={"a": "/x/a"}, device="cuda", dtype="bf16", adapter_mode="folded")
    data = with_adapter.to_dict()
    assert sorted(data) == sorted(["model", "modelDir", "dtype", "generationConfig", "batchInvariant",
                                   "servedModelName", "adapters", "device", "adapterMode"])
    assert data["adapterMode"] == "folded"
    # a spec written before adapterMode existed serves its adapters unmerged, as it did
    assert LoadSpec.from_dict({k: v for k, v in data.items() if k != "adapterMode"}).adapter_mode == "unmerged"
    assert LoadSpec.from_dict(json.loads(json.dumps(data))) == with_adapter
    assert LoadSpec.read(with_adapter.write(tmp_path / "spec.json")) == with_adapter


@pytest.mark.parametrize(
    ("change", "words"),
    [({"dtype": "int8"}, "dtype int8 is not one of fp32, bf16, fp16"),
     ({"device": "tpu"}, "device tpu is not one of cpu, cuda"),
     ({"adapters": {"tiny": "/x"}}, "adapter name tiny is also the base model's served name")],
)
def test_bad_specs_are_refused(spec, change, words):
    with pytest.raises(ValidationFailed, match=words):
        dataclasses.replace(spec, **change)


def test_a_missing_field_is_named():
    with pytest.raises(ValidationFailed, match="field modelDir is missing"):
        LoadSpec.from_dict({"model": "m", "dtype": "fp32", "servedModelName": "m"})


def test_sampling_defaults_follow_the_generation_config():
    assert sampling_defaults({"do_sample": False, "temperature": 0.7, "max_new_tokens": 64}) == {
        "temperature": 0.0, "top_p": 1.0, "top_k": 0, "repetition_penalty": 1.0, "max_tokens": 64}
    sampled = sampling_defaults({"do_sample": True, "temperature": 0.6, "top_p": 0.95, "top_k": 20})
    assert (sampled["temperature"], sampled["top_p"], sampled["top_k"], sampled["max_tokens"]) == (0.6, 0.95, 20, 1024)


def test_a_model_that_does_not_say_answers_up_to_the_deployment_limit_within_its_context():
    """Issue 29 item 3: not OpenAI's 16 tokens; vLLM's rule (the smaller of the default and the rest
    of the context after the prompt), never below 1 (the length check then names the prompt)."""
    assert DEFAULT_MAX_TOKENS == 1024 and sampling_defaults({})["max_tokens"] == 1024
    assert default_max_tokens(1024, max_context=2048, prompt_tokens=16) == 1024
    assert default_max_tokens(1024, max_context=2048, prompt_tokens=2000) == 48
    assert default_max_tokens(64, max_context=2048, prompt_tokens=2040) == 8
    assert default_max_tokens(1024, max_context=2048, prompt_tokens=2048) == 1
    assert default_max_tokens(1024, max_context=None, prompt_tokens=5000) == 1024


def test_generation_defaults_say_where_the_answer_length_comes_from(tmp_path):
    assert generation_defaults({"do_sample": False}, 8192) == {
        "temperature": 0.0, "topP": 1.0, "topK": 0, "repetitionPenalty": 1.0, "maxTokens": 1024,
        "maxTokensFrom": "deployment", "maxContext": 8192}
    said = generation_defaults({"do_sample": True, "temperature": 0.7, "max_new_tokens": 256}, None)
    assert (said["temperature"], said["maxTokens"], said["maxTokensFrom"], said["maxContext"]) == (0.7, 256, "model", None)
    assert config_max_context({"max_position_embeddings": 4096}) == 4096
    assert config_max_context({"text_config": {"max_position_embeddings": 512}}) == 512  # an image-text model
    assert config_max_context({}) is None
    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": 32768}))
    assert model_max_context(tmp_path) == 32768 and model_max_context(tmp_path / "absent") is None


def test_load_model_follows_the_spec(spec, tmp_path):
    from peft import LoraConfig, PeftModel, get_peft_model

    from shared.models import load_causal_lm

    adapter = get_peft_model(load_causal_lm(spec.model_dir, "fp32"), LoraConfig(r=4, target_modules=["q_proj"]))
    adapter.save_pretrained(tmp_path / "a")
    adapter.save_pretrained(tmp_path / "b")
    overridden = {**spec.generation_config, "max_new_tokens": 7}
    model, tokenizer = load_model(dataclasses.replace(
        spec, dtype="bf16", generation_config=overridden, adapters={"a": str(tmp_path / "a"), "b": str(tmp_path / "b")}))
    assert isinstance(model, PeftModel) and set(model.peft_config) == {"a", "b"} and model.active_adapter == "a"
    assert next(model.parameters()).dtype == torch.bfloat16
    assert model.generation_config.max_new_tokens == 7 and tokenizer.pad_token is not None
    assert torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(False)  # a process-wide switch: leave other tests as they were
