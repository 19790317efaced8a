"""Real architectures through the same code (issue 15, item 4): tiny random Llama 3, Gemma 3 (text)
and Qwen2.5 models in a Hugging Face hub cache (tests/shared/models/tiny_architectures.py), beside the
built-in Qwen3-style model, each trained by the SFT engine and the GRPO engine, served by a real
built-in serving process with the SFT adapter, and evaluated, with no code of its own anywhere:
chat templates, end-of-turn tokens and eos lists all come from the model's own files.

The built-in model's GRPO and endpoint paths are tested at length elsewhere (test_grpo_engine.py,
test_evaluation_scoring.py), so here it joins only the cheap parts: the loss mask, SFT, evaluation.
"""

from __future__ import annotations

import json
import math

import pytest
import requests
import torch

from services.trainer_worker.engines.evaluate import score
from services.trainer_worker.engines.grpo import run_grpo
from services.trainer_worker.engines.loss_masks import chat_row
from services.trainer_worker.engines.rollouts import RolloutServer
from services.trainer_worker.engines.sft import run_sft
from shared.models.load_spec import load_model, load_spec_for
from shared.models.loading import load_causal_lm, load_tokenizer, model_dir_for
from shared.models.prompts import prompt_token_ids
from shared.models.tiny_models import SAMPLE_DATASET, ensure_builtin
from shared.serving.generation import Generator
from shared.store.artifacts import ArtifactRoot
from tests.shared.models.tiny_architectures import ARCHITECTURES
from tests.shared.plans.plan_fixtures import amended
from tests.shared.serving.serving import ServingProcess
from tests.trainer_worker.doubles import RecordingReporter, make_job
from tests.trainer_worker.grpo_doubles import grpo_job

BUILTIN = "tiny-qwen3"
HUB = ("llama3", "gemma3", "qwen2.5")
EVERY = (BUILTIN, *HUB)
END_OF_TURN = {BUILTIN: "<|im_end|>\n", **{name: ARCHITECTURES[name].end_of_turn for name in HUB}}
CONVERSATION = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Add: 2 + 3"},
                {"role": "assistant", "content": "5"}, {"role": "user", "content": "Reverse: stone"},
                {"role": "assistant", "content": "enots"}]
SFT_STEPS = 8
ADAPTER = "snap-sft"


class Models:
    """Each architecture's catalog entry and model directory, found the way a worker finds it
    (shared.models.loading.model_dir_for: the hub cache for the three, the artifact store for the built-in),
    and its SFT run, trained once for every test of this module."""

    def __init__(self, hub_models, artifacts: ArtifactRoot, tmp_path_factory):
        self.hub_models, self.artifacts, self.tmp = hub_models, artifacts, tmp_path_factory
        self.runs: dict[str, tuple] = {}

    def entry(self, name: str) -> dict:
        return {"id": f"builtin/{BUILTIN}", "builtin": BUILTIN} if name == BUILTIN else self.hub_models.entry(name)

    def model_dir(self, name: str):
        if name == BUILTIN:
            return ensure_builtin(BUILTIN, self.artifacts)
        self.hub_models.snapshot(name)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("HF_HUB_CACHE", str(self.hub_models.cache_dir))
            return model_dir_for(self.entry(name), self.artifacts)

    def sft(self, name: str):
        """(job, reporter, result) of SFT_STEPS steps of the SFT engine on 64 sample rows."""
        if name not in self.runs:
            work = self.tmp.mktemp(f"sft-{name}")
            dataset = work / "rows.jsonl"
            dataset.write_text("".join(SAMPLE_DATASET.read_text().splitlines(keepends=True)[:64]))
            job = make_job(self.model_dir(name), work / "run", dataset=dataset, maxSteps=SFT_STEPS,
                           every_steps=None, learningRate=0.01)
            job.plan = amended(job.plan, {"model": self.entry(name)["id"]})
            reporter = RecordingReporter()
            self.runs[name] = (job, reporter, run_sft(job, reporter))
        return self.runs[name]

    def adapter(self, name: str):
        job, _, _ = self.sft(name)
        return job.snapshot_dir(SFT_STEPS) / "adapter"

    def spec(self, name: str, monkeypatch):
        """The load spec an endpoint or evaluation of the model with its SFT adapter gets."""
        monkeypatch.setenv("HF_HUB_CACHE", str(self.hub_models.cache_dir))
        return load_spec_for(entry=self.entry(name), artifacts=self.artifacts, served_model_name="base",
                             adapters={ADAPTER: str(self.adapter(name))})


@pytest.fixture(scope="module")
def models(hub_models, shared_artifacts, tmp_path_factory) -> Models:
    return Models(hub_models, ArtifactRoot(shared_artifacts), tmp_path_factory)


def decoded(tokenizer, row, *, trained: bool) -> str:
    return tokenizer.decode([t for t, m in zip(row["input_ids"], row["assistant_masks"]) if bool(m) is trained])


# --- (a) SFT: the loss mask of each template, and training


@pytest.mark.parametrize("name", EVERY)
def test_the_loss_mask_is_each_answer_and_its_templates_end_of_turn(name, models):
    tokenizer = load_tokenizer(models.model_dir(name))
    row = chat_row(tokenizer, CONVERSATION)
    end = END_OF_TURN[name]
    assert decoded(tokenizer, row, trained=True) == f"5{end}enots{end}"
    whole = tokenizer.apply_chat_template(CONVERSATION, tokenize=False)
    assert decoded(tokenizer, row, trained=False) == whole.replace(f"5{end}", "", 1).replace(f"enots{end}", "", 1)


@pytest.mark.parametrize("name", EVERY)
def test_sft_trains_lowers_the_loss_and_writes_a_snapshot(name, models):
    job, reporter, result = models.sft(name)
    losses = [p["loss"] for p in reporter.points]
    assert result.final_step == SFT_STEPS and len(losses) == SFT_STEPS
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3 - 0.5, losses
    assert [(s["step"], s["final"]) for s in reporter.snapshots] == [(SFT_STEPS, True)]
    manifest = json.loads((job.snapshot_dir(SFT_STEPS) / "snapshot.json").read_text())
    assert manifest["model"] == models.entry(name)["id"] and manifest["engine"] == "sft-single"
    config = json.loads((models.adapter(name) / "adapter_config.json").read_text())
    # "all-linear": every projection of the family's blocks (PEFT stores their full names), never its output layer
    assert {module.rsplit(".", 1)[-1] for module in config["target_modules"]} == {
        "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    assert "assistant turns" in reporter.what_trains()


# --- (b) GRPO, with rollouts from a built-in serving process


def recording_rollout_server():
    """The real rollout server, keeping each /v1/completions request and answer it made."""
    seen: list[tuple[dict, dict]] = []

    class Recording(RolloutServer):
        def _post(self, path, body):
            response = super()._post(path, body)
            if path == "/v1/completions":
                seen.append((body, response.json()))
            return response

    return Recording, seen


@pytest.mark.parametrize("name", HUB)
def test_grpo_trains_on_chat_prompts_and_hands_the_adapter_over(name, models, tmp_path):
    model_dir = models.model_dir(name)
    dataset = tmp_path / "prompts.jsonl"
    prompts = [[{"role": "user", "content": f"Add: {i} + 1"}] for i in range(4)]
    dataset.write_text("".join(json.dumps({"prompt": p, "answer": str(i + 1)}) + "\n" for i, p in enumerate(prompts)))
    job = grpo_job(model_dir, tmp_path / "run", dataset, maxSteps=3, batchSize=8, every_steps=None)
    job.plan = amended(job.plan, {"model": models.entry(name)["id"],
                                  "grpo": {"numGenerations": 4, "maxCompletionLength": 6}})
    server, seen = recording_rollout_server()
    reporter = RecordingReporter()
    result = run_grpo(job, reporter, rollout_server=server)

    assert result.final_step == 3 and [p["step"] for p in reporter.points] == [1, 2, 3]
    adapter_bytes = sum(f.stat().st_size for f in (job.snapshot_dir(3) / "adapter").iterdir())
    assert [p["handoffBytes"] for p in reporter.points] == [0, adapter_bytes, adapter_bytes]
    assert all(p["reward"] is not None for p in reporter.points)
    tokenizer = load_tokenizer(model_dir)
    templated = [prompt_token_ids(tokenizer, p) for p in prompts]
    eos = set(load_causal_lm(model_dir, "fp32").generation_config.eos_token_id)
    assert len(seen) == 3  # one request a step, holding its 2 prompt groups
    for body, answer in seen:
        assert len(body["prompt"]) == 2 and len(answer["choices"]) == 2 * 4
        assert all(p in templated for p in body["prompt"])  # through the model's own chat template
        # the run's sampling, whatever the model's generation_config says (Qwen2.5: top_k 20, ...)
        assert (body["temperature"], body["top_p"], body["top_k"], body["repetition_penalty"]) == (1.0, 1.0, -1, 1.0)
        for choice in answer["choices"]:
            ids = choice["token_ids"]
            ended = [i for i, token in enumerate(ids) if token in eos]
            assert ended in ([], [len(ids) - 1]) and (ended or len(ids) == 6)  # stops at the family's eos


# --- (c) an endpoint serving the SFT adapter, (d) an evaluation of it


def greedy_without_cache(model, ids: list[int], max_tokens: int, eos: set[int]) -> list[int]:
    """Greedy decoding by a full forward pass per token: no KV cache (nor sliding-window cache) involved."""
    out: list[int] = []
    with torch.no_grad():
        for _ in range(max_tokens):
            token = int(model(torch.tensor([ids + out])).logits[0, -1].argmax())
            out.append(token)
            if token in eos:
                break
    return out


@pytest.mark.parametrize("name", HUB)
def test_an_endpoint_serves_the_sft_adapter_through_the_models_chat_template(name, models, monkeypatch, tmp_path):
    from peft import PeftModel

    spec = models.spec(name, monkeypatch)
    server = ServingProcess(spec, tmp_path).start().wait_ready(timeout_s=120)
    messages = [{"role": "user", "content": "Add: 2 + 3"}]
    try:
        answers = {model: requests.post(f"{server.base_url}/v1/chat/completions", timeout=60, json={
            "model": model, "messages": messages, "temperature": 0, "max_tokens": 8, "repetition_penalty": 1.0,
        }).json() for model in ("base", ADAPTER)}
        text = requests.post(f"{server.base_url}/v1/completions", timeout=60,
                             json={"model": ADAPTER, "prompt": "Add: 2 + 3", "max_tokens": 1}).json()
    finally:
        server.terminate()

    # the reference: transformers' own chat-template recipe over the same files, decoded without a cache
    tokenizer = load_tokenizer(spec.model_dir)
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_dict=True)["input_ids"]
    model = PeftModel.from_pretrained(load_causal_lm(spec.model_dir, "fp32"), str(models.adapter(name))).eval()
    eos = set(model.generation_config.eos_token_id)
    with model.disable_adapter():
        expected = {"base": greedy_without_cache(model, ids, 8, eos)}
    expected[ADAPTER] = greedy_without_cache(model, ids, 8, eos)
    for served, answer in answers.items():
        choice = answer["choices"][0]
        assert answer["usage"]["prompt_tokens"] == len(ids)
        assert choice["message"]["content"] == tokenizer.decode(expected[served], skip_special_tokens=True)
        assert choice["finish_reason"] == ("stop" if expected[served][-1] in eos else "length")
    # a text prompt: the tokenizer's own special tokens (Llama 3's and Gemma's bos) count too
    plain = len(tokenizer("Add: 2 + 3", add_special_tokens=False)["input_ids"])
    assert text["usage"]["prompt_tokens"] == plain + (1 if ARCHITECTURES[name].adds_bos else 0)


@pytest.mark.parametrize("name", EVERY)
def test_an_evaluation_scores_the_sft_adapter(name, models, monkeypatch):
    spec = models.spec(name, monkeypatch)
    model, tokenizer = load_model(spec)
    rows = [json.loads(line) for line in SAMPLE_DATASET.read_text().splitlines()[:6]]
    scores = score(Generator(model, tokenizer, spec), ADAPTER, rows, max_tokens=6)
    metrics = scores.metrics
    assert metrics["rows"] == 6 and math.isfinite(metrics["loss"]) and metrics["loss"] > 0
    assert metrics["perplexity"] == pytest.approx(math.exp(metrics["loss"]))
    assert 0.0 <= metrics["exactMatch"] <= 1.0 and metrics["rewards"] == {"exact_match": metrics["exactMatch"]}
    # the evaluation's loss is taken over the tokens SFT trains: the answer and the template's end of turn
    for row, result in zip(rows, scores.rows):
        assert result["targetTokens"] == sum(chat_row(tokenizer, row["messages"])["assistant_masks"])
