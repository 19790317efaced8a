"""How long an answer runs when the request names no max_tokens (issue 29 item 3), through a real
built-in server and the official `openai` client: the model's max_new_tokens if it has one, else
the deployment's limit (shared/load_spec.DEFAULT_MAX_TOKENS), cut to what the context leaves after
the prompt, as vLLM answers; never OpenAI's 16."""

from __future__ import annotations

import dataclasses

import pytest
from openai import OpenAI

from shared.load_spec import DEFAULT_MAX_TOKENS
from shared.models import load_tokenizer
from tests.shared.serving.serving import ServingProcess

CONTEXT = 2048  # the built-in tiny model's max_position_embeddings
LEFT = 40  # tokens of context the long prompts below leave for the answer: more than 16, less than 64


@pytest.fixture(scope="module")
def silent_spec(base_spec):
    """The tiny model with a generation config that does not say how long an answer may be."""
    config = {k: v for k, v in base_spec.generation_config.items() if k != "max_new_tokens"}
    return dataclasses.replace(base_spec, generation_config=config)


@pytest.fixture(scope="module")
def client(silent_spec, tmp_path_factory):
    proc = ServingProcess(silent_spec, tmp_path_factory.mktemp("silent"), cpu_threads=1).start().wait_ready()
    yield OpenAI(base_url=f"{proc.base_url}/v1", api_key="x", max_retries=0, timeout=120)
    proc.terminate()


def long_messages(spec, prompt_tokens: int) -> list[dict[str, str]]:
    """A chat whose prompt (through the chat template) is at least `prompt_tokens` tokens, within 8."""
    tokenizer = load_tokenizer(spec.model_dir)

    def length(words: int) -> int:
        messages = [{"role": "user", "content": "the " * words}]
        return len(tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True))

    words = prompt_tokens
    while length(words) > prompt_tokens:
        words -= 1
    return [{"role": "user", "content": "the " * words}]


def test_a_chat_answer_without_max_tokens_runs_to_the_end_of_the_context(client, silent_spec):
    """The issue's symptom: a chat answer cut at 16 tokens. The tiny model never stops by itself,
    so the answer runs to what the context leaves after the prompt."""
    messages = long_messages(silent_spec, CONTEXT - LEFT)
    answer = client.chat.completions.create(model="tiny", messages=messages, temperature=0)
    usage = answer.usage
    assert usage.prompt_tokens >= CONTEXT - LEFT - 8
    assert usage.completion_tokens == CONTEXT - usage.prompt_tokens > 16
    assert answer.choices[0].finish_reason == "length"


def test_a_completion_without_max_tokens_gets_the_deployment_limit_when_the_context_has_room(client):
    answer = client.completions.create(model="tiny", prompt=[5] * 8, temperature=0)
    assert answer.usage.completion_tokens == DEFAULT_MAX_TOKENS
    assert answer.choices[0].finish_reason == "length"


def test_a_named_max_tokens_is_kept_and_one_past_the_context_is_refused(client):
    short = client.completions.create(model="tiny", prompt=[5] * 8, max_tokens=3, temperature=0)
    assert short.usage.completion_tokens == 3
    with pytest.raises(Exception, match="maximum context length is 2048 tokens"):
        client.completions.create(model="tiny", prompt=[5] * (CONTEXT - 10), max_tokens=20, temperature=0)


def test_a_model_that_says_max_new_tokens_is_cut_to_the_context_too(base_spec, tmp_path):
    """The built-in model says 64: a prompt that leaves 40 tokens gets 40, as vLLM answers."""
    from shared.load_spec import load_model
    from shared.serving.generation import Generator, Outcome, SamplingParams

    model, tokenizer = load_model(base_spec)
    generator = Generator(model, tokenizer, base_spec)
    prompt = [5] * (CONTEXT - LEFT)
    params = generator.fit_to_context(SamplingParams.from_request({"temperature": 0}, generator.defaults), [prompt])
    assert (generator.defaults["max_tokens"], params.max_tokens, params.max_tokens_named) == (64, LEFT, False)
    generator.check_length(prompt, params)  # fits exactly
    outcome = Outcome(prompt_tokens=len(prompt))
    "".join(generator.generate(prompt, params, "tiny", outcome))
    assert (outcome.completion_tokens, outcome.finish_reason) == (LEFT, "length")
    named = SamplingParams.from_request({"max_tokens": 7}, generator.defaults)
    assert generator.fit_to_context(named, [prompt]) is named
