"""adapterMode folded (shared/serving/adapter_fold.py): the built-in server folds the adapter it is
handed into its own copy of the base weights, and answers as the unmerged adapter does.

Tolerances, on the logits of every position of a prompt and its greedy completion:
- fp32: max |folded - unmerged| <= 1e-4. The fold rounds each weight once (W0 + s B A, relative
  error 6e-8) where the unmerged path rounds its base and LoRA products separately; the difference
  is reassociation, measured at 3-6e-6 on logits of magnitude ~5. 1e-4 leaves 15x headroom and is
  still 1e-5 of the logit scale, too small to change any choice but a near-tie.
- bf16: max |folded - unmerged| <= 2 x max |unmerged - exact|, where "exact" is the same adapter
  computed in fp32 over the same (bf16) base weights. Folding rounds each weight to bf16 once (relative
  2^-9), the same size of error bf16 arithmetic already makes in the unmerged path, so the two
  differ by at most that error twice (measured here: 0.07-0.15 against 0.06-0.10 per prompt, logits ~5).
  A fixed figure would not carry over between models; this bound scales with bf16's own error.
Greedy tokens: equal over whole completions in fp32; in bf16 equal at every position where the
unmerged logits' top-2 margin exceeds twice the bound (elsewhere bf16 itself decides a near-tie).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from shared import reasons
from shared.errors import ValidationFailed
from shared.models.load_spec import LoadSpec, load_model
from shared.serving.generation import Generator, SamplingParams

FP32_TOLERANCE = 1e-4
BF16_ERRORS = 2.0  # bf16: the folded-unmerged difference bound, in units of bf16's own error
TEXTS = ("Reverse: stone", "What is the answer?", "hello there my friend")


def generator(spec: LoadSpec, mode: str, adapters: dict) -> Generator:
    spec = dataclasses.replace(spec, adapters=adapters, adapter_mode=mode)
    return Generator(*load_model(spec), spec)


@pytest.fixture(autouse=True)
def _deterministic_off():
    yield
    torch.use_deterministic_algorithms(False)  # load_model's process-wide switch


def greedy(gen: Generator, name: str, max_tokens: int = 24) -> list[list[int]]:
    params = SamplingParams.from_request({"temperature": 0, "max_tokens": max_tokens, "repetition_penalty": 1.0},
                                         gen.defaults)
    prompts = [gen.encode_chat([{"role": "user", "content": t}]) for t in TEXTS]
    return [group[0].token_ids for group in gen.generate_many(prompts, params, name)]


def logits(gen: Generator, ids: list[int]) -> torch.Tensor:
    with torch.inference_mode():
        return gen.model(torch.tensor([ids])).logits[0].float()


def test_fp32_folded_answers_as_the_unmerged_adapter(base_spec, adapter_dirs):
    adapters = {"alpha": str(adapter_dirs["alpha"])}
    unmerged, folded = generator(base_spec, "unmerged", adapters), generator(base_spec, "folded", adapters)
    assert not hasattr(folded.model, "peft_config")  # a plain model: no LoRA layers left to run
    completions = greedy(unmerged, "alpha")
    assert greedy(folded, "alpha") == completions
    assert completions != greedy(generator(base_spec, "unmerged", {}), "tiny")  # the adapter changes the answer
    for text, completion in zip(TEXTS, completions):
        ids = unmerged.encode_chat([{"role": "user", "content": text}]) + completion
        assert (logits(folded, ids) - logits(unmerged, ids)).abs().max() <= FP32_TOLERANCE


def test_bf16_folded_answers_as_the_unmerged_adapter_within_bf16s_own_error(base_spec, adapter_dirs):
    spec = dataclasses.replace(base_spec, dtype="bf16")
    adapters = {"alpha": str(adapter_dirs["alpha"])}
    unmerged, folded = generator(spec, "unmerged", adapters), generator(spec, "folded", adapters)
    exact = generator(spec, "unmerged", adapters)
    exact.model = exact.model.float()  # the bf16 base weights, computed in fp32
    for text, completion in zip(TEXTS, greedy(unmerged, "alpha")):
        ids = unmerged.encode_chat([{"role": "user", "content": text}]) + completion
        u, f, e = logits(unmerged, ids), logits(folded, ids), logits(exact, ids)
        bound = BF16_ERRORS * float((u - e).abs().max())
        assert 0 < float((f - u).abs().max()) <= bound
        top2 = u.topk(2, dim=-1).values
        clear = (top2[:, 0] - top2[:, 1]) > 2 * bound
        assert clear.any() and torch.equal(f.argmax(-1)[clear], u.argmax(-1)[clear])


def test_replacing_and_unloading_many_times_leaves_no_drift(base_spec, adapter_dirs):
    """Each fold is computed from the base weights kept as loaded, never by undoing the one before:
    after 20 hand-offs the weights are bit for bit a fresh fold's, and unloading gives back the
    base weights bit for bit (in bf16, where subtracting deltas would drift by a rounding each time)."""
    spec = dataclasses.replace(base_spec, dtype="bf16")

    def weights(gen: Generator) -> dict[str, torch.Tensor]:
        return {k: v.clone() for k, v in gen.model.state_dict().items()}

    fresh = {name: weights(generator(spec, "folded", {name: str(path)})) for name, path in adapter_dirs.items()}
    base = weights(generator(spec, "folded", {}))
    assert any(not torch.equal(fresh["alpha"][k], base[k]) for k in base)
    gen = generator(spec, "folded", {"policy-0": str(adapter_dirs["alpha"])})
    for step in range(1, 21):
        name = "beta" if step % 2 else "alpha"
        assert gen.load_adapter(f"policy-{step}", str(adapter_dirs[name])) == [f"policy-{step - 1}"]
        assert list(gen.adapters) == [f"policy-{step}"]
    now = weights(gen)
    assert all(torch.equal(now[k], fresh["alpha"][k]) for k in now)
    gen.unload_adapter("policy-20")
    assert gen.adapters == {} and gen.held.originals == {}
    now = weights(gen)
    assert all(torch.equal(now[k], base[k]) for k in now)


def test_a_fold_that_fails_half_way_leaves_the_base_weights_not_half_of_two_adapters(base_spec, adapter_dirs,
                                                                                     monkeypatch):
    from shared.serving import adapter_fold

    gen = generator(base_spec, "folded", {"policy-0": str(adapter_dirs["alpha"])})
    base = {k: v.clone() for k, v in generator(base_spec, "folded", {}).model.state_dict().items()}
    written = []

    def out_of_memory_on_the_third(self, weight, base_weight):
        if len(written) == 2:
            raise RuntimeError("out of memory")
        written.append(self.module)
        original(self, weight, base_weight)

    original = adapter_fold.ModuleFold.write
    monkeypatch.setattr(adapter_fold.ModuleFold, "write", out_of_memory_on_the_third)
    with pytest.raises(RuntimeError, match="out of memory"):
        gen.load_adapter("policy-1", str(adapter_dirs["beta"]))
    assert gen.adapters == {} and len(written) == 2
    now = gen.model.state_dict()
    assert all(torch.equal(now[k], base[k]) for k in base)


def test_a_folded_server_refuses_the_base_model_while_an_adapter_is_folded(base_spec, adapter_dirs):
    gen = generator(base_spec, "folded", {"policy-3": str(adapter_dirs["alpha"])})
    with pytest.raises(ValidationFailed) as refused:
        gen.check_model("tiny")
    assert refused.value.message == reasons.folded_server_serves_only("policy-3", "tiny")
    assert refused.value.message == ("this server has adapter policy-3 folded into its weights, so it answers "
                                     "for policy-3 only, not tiny")
    assert gen.check_model("policy-3") == "policy-3"
    gen.unload_adapter("policy-3")
    assert gen.check_model(None) == "tiny"  # nothing folded: the base model again


def test_adapters_it_cannot_fold_exactly_are_refused_with_the_reason(base_spec, adapter_dirs, tmp_path):
    import json
    import shutil

    gen = generator(base_spec, "folded", {})
    dora = tmp_path / "dora"
    shutil.copytree(adapter_dirs["alpha"], dora)
    config = json.loads((dora / "adapter_config.json").read_text())
    (dora / "adapter_config.json").write_text(json.dumps({**config, "use_dora": True}))
    with pytest.raises(ValidationFailed) as refused:
        gen.load_adapter("d", str(dora))
    assert refused.value.message == ("adapter d cannot be folded into this server's weights: its configuration "
                                     "sets use_dora (true); serve it with adapterMode unmerged")
    assert gen.adapters == {} and gen.held.originals == {}  # nothing was changed


def test_a_folded_load_spec_names_one_adapter_at_most(base_spec, adapter_dirs):
    with pytest.raises(ValidationFailed) as refused:
        dataclasses.replace(base_spec, adapter_mode="folded",
                            adapters={name: str(path) for name, path in adapter_dirs.items()})
    assert refused.value.message == "load spec: adapterMode folded serves one adapter at a time, and 2 are named"
    with pytest.raises(ValidationFailed, match="adapterMode merged is not one of unmerged, folded"):
        dataclasses.replace(base_spec, adapter_mode="merged")


@pytest.mark.parametrize("mode", ["unmerged", "folded"])
def test_a_batch_of_prompts_is_one_generation_over_the_kv_cache(base_spec, adapter_dirs, mode):
    """A rollout request's prompts are sampled as one batch: one forward pass over every row's whole
    prompt, then one pass per new token over that token alone (the KV cache holds the rest)."""
    gen = generator(base_spec, mode, {"alpha": str(adapter_dirs["alpha"])})
    # as a config saved from a run with activation checkpointing may say: the server uses the cache anyway
    gen.model.generation_config.use_cache = gen.model.config.use_cache = False
    shapes: list[tuple[int, ...]] = []
    hook = gen.model.get_decoder().register_forward_pre_hook(
        lambda module, args, kwargs: shapes.append(tuple((kwargs.get("input_ids") if kwargs.get("input_ids") is not None
                                                          else kwargs["inputs_embeds"]).shape[:2])),
        with_kwargs=True)
    try:
        params = SamplingParams.from_request({"temperature": 1.0, "max_tokens": 6, "n": 3, "seed": 1}, gen.defaults)
        prompts = [gen.encode_chat([{"role": "user", "content": t}]) for t in TEXTS[:2]]
        gen.generate_many(prompts, params, "alpha")
    finally:
        hook.remove()
    width = max(map(len, prompts))
    assert shapes[0] == (6, width) and len(shapes) >= 2
    assert set(shapes[1:]) == {(6, 1)}
