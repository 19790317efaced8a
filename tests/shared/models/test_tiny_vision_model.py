"""The built-in image-text model (issue 17): a Gemma 3 image-text model at toy size, built offline
and deterministically, loaded through the one model-load path with its processor."""

from __future__ import annotations

import io
import json

import pytest

from shared.data.images import data_url
from shared.models.catalog import Catalog
from shared.models.loading import load_causal_lm, load_processor, load_tokenizer
from shared.models.tiny_models import METADATA_FILE, builtin_facts, ensure_builtin
from shared.models.tiny_vision_model import BOI, IMAGE_SOFT, VISION_MODELS
from shared.serving.image_inputs import encode, pixel_inputs
from shared.store.artifacts import ArtifactRoot
from tests.conftest import make_config

NAME = "tiny-gemma3-vision"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return ensure_builtin(NAME, ArtifactRoot(tmp_path_factory.mktemp("artifacts")))


def test_two_builds_are_identical(built, tmp_path):
    second = ensure_builtin(NAME, ArtifactRoot(tmp_path))
    names = sorted(p.name for p in built.iterdir())
    assert names == sorted(p.name for p in second.iterdir())
    assert {"config.json", "model.safetensors", "tokenizer.json", "processor_config.json", "chat_template.jinja",
            "generation_config.json", METADATA_FILE} <= set(names)
    for name in names:
        assert (built / name).read_bytes() == (second / name).read_bytes(), name


def test_the_facts_shown_without_a_build_are_those_of_the_built_model(built, redis_url, key_prefix, tmp_path):
    facts = builtin_facts(NAME)
    assert facts == json.loads((built / METADATA_FILE).read_text())
    assert facts["modality"] == "image-text" and facts["architecture"] == "Gemma3ForConditionalGeneration"
    model = load_causal_lm(built, "fp32")
    assert type(model).__name__ == "Gemma3ForConditionalGeneration"
    assert sum(p.numel() for p in model.parameters()) == facts["parameters"]
    catalog = Catalog(make_config(redis_url, key_prefix, tmp_path, extra_catalog=[
        {"id": "builtin/tiny-gemma3-vision", "builtin": NAME}]), ArtifactRoot(tmp_path))
    described = catalog.get("builtin/tiny-gemma3-vision")
    assert described["modality"] == "image-text" and described["source"] == f"builtin:{NAME}"
    assert described["parameters"] == facts["parameters"] and described["gpuCounts"] == [1, 2]


def test_the_processor_expands_each_image_into_its_soft_tokens(built):
    from PIL import Image

    processor, tokenizer = load_processor(built), load_tokenizer(built)
    image = Image.new("RGB", (20, 40), (0, 0, 255))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    messages = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(buffer.getvalue())}},
                                             {"type": "text", "text": "What colour is the shape?"}]}]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text == f"<bos><start_of_turn>user\n{BOI}What colour is the shape?<end_of_turn>\n<start_of_turn>model\n"
    encoded = encode(processor, messages, generation_prompt=True)
    soft = tokenizer.convert_tokens_to_ids(IMAGE_SOFT)
    spec = VISION_MODELS[NAME]
    assert encoded["input_ids"].count(soft) == spec.image_tokens
    assert encoded["token_type_ids"] == [int(t == soft) for t in encoded["input_ids"]]
    assert pixel_inputs(processor, [image])["pixel_values"].shape == (1, 3, spec.image_size, spec.image_size)
