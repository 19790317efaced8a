"""The built-in serving process over the built-in image-text model (issue 17), run for real and
driven with the official `openai` client: chat with image_url parts, streamed and not, answers
what the model generates in this process from the same inputs; a bad image is a 400 naming it."""

from __future__ import annotations

import json

import openai
import pytest
import torch
from openai import OpenAI

from shared import reasons
from shared.models.load_spec import load_model, load_spec_for
from shared.models.loading import load_processor
from shared.models.tiny_vision_model import IMAGE_SOFT, SAMPLE_DATASET
from shared.serving.image_inputs import encode, message_images, pixel_inputs
from tests.shared.serving.serving import ServingProcess

ENTRY = {"id": "builtin/tiny-gemma3-vision", "builtin": "tiny-gemma3-vision"}
SERVED = "tiny-vision"


@pytest.fixture(scope="module")
def spec(artifacts):
    return load_spec_for(entry=ENTRY, artifacts=artifacts, served_model_name=SERVED)


@pytest.fixture(scope="module")
def client(spec, tmp_path_factory):
    proc = ServingProcess(spec, tmp_path_factory.mktemp("server")).start().wait_ready(timeout_s=120)
    yield OpenAI(base_url=f"{proc.base_url}/v1", api_key="x", max_retries=0, timeout=60)
    proc.terminate()


def sample_question() -> list[dict]:
    row = json.loads(SAMPLE_DATASET.read_text().splitlines()[1])
    return row["messages"][:1]


def in_process(spec, messages, max_tokens: int) -> str:
    model, tokenizer = load_model(spec)
    processor = load_processor(spec.model_dir)
    images = message_images(messages)
    encoded = encode(processor, messages, generation_prompt=True, images=images)
    inputs = {key: torch.tensor([value]) for key, value in encoded.items()}
    with torch.inference_mode():
        out = model.generate(**inputs, **pixel_inputs(processor, images), attention_mask=torch.ones_like(
            inputs["input_ids"]), max_new_tokens=max_tokens, do_sample=False)
    torch.use_deterministic_algorithms(False)  # load_model's process-wide switch
    return tokenizer.decode(out[0, len(encoded["input_ids"]):], skip_special_tokens=True)


def test_chat_with_an_image_streamed_and_not(client, spec):
    messages = sample_question()
    whole = client.chat.completions.create(model=SERVED, messages=messages, max_tokens=8, temperature=0)
    assert whole.choices[0].message.content == in_process(spec, messages, 8)
    assert whole.usage.prompt_tokens > 4 + 6  # the image's soft tokens are counted
    streamed = client.chat.completions.create(model=SERVED, messages=messages, max_tokens=8, temperature=0,
                                              stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)
    assert text == whole.choices[0].message.content


def test_an_undecodable_image_is_a_400_naming_its_part(client):
    messages = [{"role": "user", "content": [{"type": "text", "text": "What colour is the shape?"},
                                             {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model=SERVED, messages=messages, max_tokens=4)
    assert refused.value.body["message"] == reasons.request_part_refused(
        "messages[0].content[1].image_url.url", "is not an image Pillow can decode")



def test_a_group_of_completions_reads_the_image_too(spec):
    """n > 1 (a GRPO run's rollouts: `generate_many`) samples the group with the image's pixels: a
    seeded group repeats, and differs from the same group sampled without them; no completion
    holds an image's placeholder token."""
    from shared.serving.generation import Generator, SamplingParams

    model, tokenizer = load_model(spec)
    generator = Generator(model, tokenizer, spec)
    prompt_ids, extras = generator.encode_chat_inputs(sample_question())
    assert "pixel_values" in extras
    params = SamplingParams.from_request({"max_tokens": 6, "temperature": 1.0, "n": 4, "seed": 3}, generator.defaults)
    [with_image] = [[s.token_ids for s in group] for group in generator.generate_many([prompt_ids], params, SERVED, extras)]
    assert with_image == [s.token_ids for s in generator.generate_many([prompt_ids], params, SERVED, extras)[0]]
    assert with_image != [s.token_ids for s in generator.generate_many([prompt_ids], params, SERVED)[0]]
    # the image's soft token is never sampled: a completion holding one would be read as an image
    soft = tokenizer.convert_tokens_to_ids(IMAGE_SOFT)
    assert generator.suppressed == [soft] and soft in generator._generation_config(params).suppress_tokens
    torch.use_deterministic_algorithms(False)  # load_model's process-wide switch
