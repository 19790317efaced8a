"""The built-in server's Generator (shared/serving/generation.py) takes a request's sampling settings
over the model's generation_config, and the model's only where the request is silent.

transformers' `generate` fills every setting left None from the model's own generation_config, so a
request's "no top-k filter" or "no repetition penalty" must be sent as values (0, 1.0), not as None:
real models' files set both (Qwen2.5: top_k 20, repetition_penalty 1.05). Here the built-in model is
given a generation_config that would show any leak plainly: top_k 1 and repetition_penalty 5.
"""

from __future__ import annotations

import pytest
import torch

from shared.models.load_spec import load_model, load_spec_for
from shared.serving.generation import Generator, Outcome, SamplingParams

LOUD = {"do_sample": True, "temperature": 1.0, "top_k": 1, "repetition_penalty": 5.0, "max_length": 4096}


@pytest.fixture(scope="module")
def generator(artifacts) -> Generator:
    entry = {"id": "builtin/tiny-qwen3", "builtin": "tiny-qwen3", "generationConfig": LOUD}
    spec = load_spec_for(entry=entry, artifacts=artifacts, served_model_name="tiny")
    model, tokenizer = load_model(spec)
    return Generator(model, tokenizer, spec)


def prompt(generator) -> list[int]:
    return generator.encode_chat([{"role": "user", "content": "Reverse: stone"}])


def greedy(generator, body: dict) -> list[int]:
    params = SamplingParams.from_request({"temperature": 0, "max_tokens": 12, **body}, generator.defaults)
    ids = generator.generate_many([prompt(generator)], params, "tiny")[0][0].token_ids
    return [token for token in ids if token not in generator.eos_ids]


def argmax_decode(generator, max_tokens: int) -> list[int]:
    """Plain greedy decoding, one full forward pass per token: no processor of any kind."""
    ids, out = prompt(generator), []
    with torch.no_grad():
        for _ in range(max_tokens):
            token = int(generator.model(torch.tensor([ids + out])).logits[0, -1].argmax())
            if token in generator.eos_ids:
                break
            out.append(token)
    return out


def test_a_request_without_a_top_k_filter_samples_beyond_the_models_top_k(generator):
    params = SamplingParams.from_request({"temperature": 1.0, "top_k": -1, "repetition_penalty": 1.0, "n": 16,
                                          "max_tokens": 3, "seed": 7}, generator.defaults)
    assert generator.defaults["top_k"] == 1  # what the request would get if it named none
    first_tokens = {tuple(s.token_ids[:1]) for s in generator.generate_many([prompt(generator)], params, "tiny")[0]}
    assert len(first_tokens) > 1  # top_k 1 would give every completion the same first token


def test_prompts_of_different_lengths_in_one_batch_each_continue_as_alone(generator):
    """A step's prompt groups in one generation: the shorter prompt is left-padded behind the
    attention mask, and each row's greedy answer is the one its prompt gets alone."""
    short = generator.encode_chat([{"role": "user", "content": "Reverse: ox"}])
    long = generator.encode_chat([{"role": "user", "content": "Reverse: a much longer line of words"}])
    params = SamplingParams.from_request({"temperature": 0, "max_tokens": 8, "repetition_penalty": 1.0, "n": 2},
                                         generator.defaults)
    alone = [generator.generate_many([p], params, "tiny")[0][0].token_ids for p in (short, long)]
    together = generator.generate_many([short, long], params, "tiny")
    assert len(short) < len(long) and [[s.token_ids for s in group] for group in together] == [
        [alone[0]] * 2, [alone[1]] * 2]


def test_a_request_without_a_repetition_penalty_is_plain_greedy(generator):
    assert greedy(generator, {"repetition_penalty": 1.0}) == argmax_decode(generator, 12)
    # silent, it gets the model's penalty, as vLLM's server does
    assert greedy(generator, {}) != argmax_decode(generator, 12)


def test_the_models_max_length_does_not_bound_or_warn(generator):
    """Every generation names max_new_tokens; the Generator drops the model's max_length, which
    transformers would otherwise warn about on every request (Llama 3's generation_config sets 4096)."""
    assert generator.model.generation_config.max_length is None
    params = SamplingParams.from_request({"temperature": 0, "max_tokens": 30}, generator.defaults)
    outcome = Outcome(prompt_tokens=0)
    "".join(generator.generate(prompt(generator), params, "tiny", outcome))
    assert outcome.completion_tokens <= 30


def test_an_adapter_copied_into_the_slot_of_one_unloaded_answers_as_if_loaded_fresh(base_spec, adapter_dirs):
    """A rollout server's hand-off (load policy-N, unload policy-N-1) copies the new weights into the
    modules of the adapter unloaded before it instead of building them anew; what it serves is the
    same as a fresh load's."""
    import dataclasses

    def answers(generator: Generator, name: str) -> list[int]:
        params = SamplingParams.from_request({"temperature": 0, "max_tokens": 8, "repetition_penalty": 1.0},
                                             generator.defaults)
        return generator.generate_many([prompt(generator)], params, name)[0][0].token_ids

    spec = dataclasses.replace(base_spec, adapters={"policy-0": str(adapter_dirs["alpha"])})
    generator = Generator(*load_model(spec), spec)
    fresh = {name: answers(Generator(*load_model(dataclasses.replace(base_spec, adapters={name: str(path)})),
                                     dataclasses.replace(base_spec, adapters={name: str(path)})), name)
             for name, path in adapter_dirs.items()}
    assert fresh["alpha"] != fresh["beta"]
    for step, adapter in enumerate(["beta", "alpha", "beta"], start=1):
        generator.load_adapter(f"policy-{step}", str(adapter_dirs[adapter]))
        generator.unload_adapter(f"policy-{step - 1}")
        assert list(generator.adapters) == [f"policy-{step}"]
        assert answers(generator, f"policy-{step}") == fresh[adapter]
    assert generator.held.copied == 2  # policy-1 was built by PEFT (no spare yet); 2 and 3 were copied
    assert len(generator.model.peft_config) == 2  # the served adapter and one spare, never more
    generator.unload_adapter("policy-3")  # the last one: back to the base model, no LoRA layers left
    assert not hasattr(generator.model, "peft_config")
    torch.use_deterministic_algorithms(False)  # load_model's process-wide switch


def test_an_adapter_of_another_shape_is_loaded_by_peft_and_the_spare_dropped(base_spec, adapter_dirs, tmp_path):
    import dataclasses

    from tests.shared.serving.serving import make_adapter

    spec = dataclasses.replace(base_spec, adapters={"a": str(adapter_dirs["alpha"]), "b": str(adapter_dirs["beta"])})
    generator = Generator(*load_model(spec), spec)
    generator.unload_adapter("a")
    assert generator.held.spare == "a"
    other = make_adapter(base_spec.model_dir, tmp_path / "rank-2", seed=3, rank=2)
    generator.load_adapter("a", str(other))  # its old name again, another rank: not copied
    assert generator.held.copied == 0 and generator.held.spare is None
    assert sorted(generator.model.peft_config) == ["a", "b"] and generator.model.peft_config["a"].r == 2
    torch.use_deterministic_algorithms(False)
