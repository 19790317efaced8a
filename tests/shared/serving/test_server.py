"""The built-in serving process, run for real and driven with the official `openai` client."""

from __future__ import annotations

import dataclasses
import json
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest
import requests
import torch
from openai import OpenAI

from shared import reasons
from shared.models.load_spec import load_model
from tests.shared.serving.conftest import SERVED_NAME
from tests.shared.serving.serving import ServingProcess

PROMPT = "Hello, world! How are you today?"
MESSAGES = [{"role": "user", "content": "What is the answer?"}]


@pytest.fixture(scope="module")
def spec(base_spec, adapter_dirs):
    """The base model with adapter `alpha` loaded at start; `beta` is loaded at run time."""
    return dataclasses.replace(base_spec, adapters={"alpha": str(adapter_dirs["alpha"])})


@pytest.fixture(scope="module")
def server(spec, tmp_path_factory):
    proc = ServingProcess(spec, tmp_path_factory.mktemp("server"), endpoint_id="ep-test",
                          cpu_threads=1).start().wait_ready()
    yield proc
    proc.terminate()


@pytest.fixture(scope="module")
def client(server) -> OpenAI:
    return OpenAI(base_url=f"{server.base_url}/v1", api_key="x", max_retries=0, timeout=30)


@pytest.fixture(scope="module")
def in_process(spec, adapter_dirs):
    """Greedy generation in this process from the same load spec: what the server must answer."""
    model, tokenizer = load_model(spec)
    model.load_adapter(str(adapter_dirs["beta"]), adapter_name="beta")

    def generate(model_name: str, *, prompt: str | None = None, messages=None, max_tokens: int = 16) -> str:
        if messages is not None:
            prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        inputs = tokenizer(prompt, return_tensors="pt", add_special_tokens=messages is None)
        with torch.inference_mode():
            if model_name == SERVED_NAME:
                with model.disable_adapter():
                    out = model.generate(**inputs, max_new_tokens=max_tokens, do_sample=False)
            else:
                model.set_adapter(model_name)
                out = model.generate(**inputs, max_new_tokens=max_tokens, do_sample=False)
        return tokenizer.decode(out[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True)

    yield generate
    torch.use_deterministic_algorithms(False)  # load_model's process-wide switch: leave other tests as they were


def complete(client: OpenAI, model: str = SERVED_NAME, **kwargs):
    return client.completions.create(model=model, prompt=kwargs.pop("prompt", PROMPT), max_tokens=16, temperature=0, **kwargs)


def test_models_lists_the_base_and_its_adapters(client):
    models = {m.id: m for m in client.models.list().data}
    assert set(models) == {SERVED_NAME, "alpha"}
    assert models["alpha"].parent == SERVED_NAME and models[SERVED_NAME].object == "model"


def test_health_and_endpoint_bound_logs(server):
    assert requests.get(f"{server.base_url}/health", timeout=5).status_code == 200
    lines = [json.loads(line) for line in server.log().splitlines() if line.startswith("{")]
    # it computes with the threads it was given (the grant's share of the cores), not every core
    assert [(line["endpoint"], line["threads"]) for line in lines if line["event"] == "serving"] == [("ep-test", 1)]


@pytest.mark.parametrize("model", [SERVED_NAME, "alpha"])
def test_greedy_completion_is_deterministic_and_matches_the_load_spec(client, in_process, model):
    first, second = complete(client, model), complete(client, model)
    assert first.choices[0].text == second.choices[0].text == in_process(model, prompt=PROMPT)
    assert first.choices[0].finish_reason == "length"
    assert (first.usage.completion_tokens, first.usage.total_tokens) == (16, first.usage.prompt_tokens + 16)


def test_an_adapter_changes_the_output(client):
    assert complete(client, "alpha").choices[0].text != complete(client, SERVED_NAME).choices[0].text


def test_streamed_completion_equals_the_whole_one(client):
    chunks = list(complete(client, "alpha", stream=True))
    assert "".join(c.choices[0].text for c in chunks) == complete(client, "alpha").choices[0].text
    assert chunks[-1].choices[0].finish_reason == "length" and len(chunks) > 2


@pytest.mark.parametrize("model", [SERVED_NAME, "alpha"])
def test_chat_streamed_and_not(client, in_process, model):
    whole = client.chat.completions.create(model=model, messages=MESSAGES, max_tokens=16, temperature=0)
    assert whole.choices[0].message.role == "assistant"
    assert whole.choices[0].message.content == in_process(model, messages=MESSAGES)
    assert whole.usage.completion_tokens <= 16
    stream = client.chat.completions.create(model=model, messages=MESSAGES, max_tokens=16, temperature=0, stream=True,
                                            stream_options={"include_usage": True})
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == whole.choices[0].message.content
    assert chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    assert chunks[-2].choices[0].finish_reason == whole.choices[0].finish_reason


def test_a_stop_string_ends_the_text_before_it(client):
    text = complete(client).choices[0].text
    stop = text[5:8]
    cut = complete(client, stop=[stop])
    assert cut.choices[0].text == text[: text.find(stop)] and cut.choices[0].finish_reason == "stop"
    streamed = "".join(c.choices[0].text for c in complete(client, stop=stop, stream=True))
    assert streamed == cut.choices[0].text


def test_seeded_sampling_repeats(client):
    def sample(seed: int) -> str:
        return client.completions.create(model="alpha", prompt=PROMPT, max_tokens=16, temperature=1.0, seed=seed).choices[0].text

    assert sample(7) == sample(7)


def test_a_group_of_sampled_completions_with_token_ids(server, client, spec):
    """What a GRPO run's rollouts ask for: n completions of one prompt (as token ids), seeded."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(spec.model_dir)
    prompt_ids = tokenizer(PROMPT)["input_ids"]
    body = {"model": "alpha", "prompt": prompt_ids, "n": 6, "max_tokens": 8, "temperature": 1.0, "seed": 3,
            "return_token_ids": True}
    answer = requests.post(f"{server.base_url}/v1/completions", json=body, timeout=60).json()
    choices = answer["choices"]
    assert [c["index"] for c in choices] == list(range(6))
    for choice in choices:
        assert choice["prompt_token_ids"] == prompt_ids and 1 <= len(choice["token_ids"]) <= 8
        assert choice["text"] == tokenizer.decode(choice["token_ids"], skip_special_tokens=True)
        assert choice["finish_reason"] == ("length" if len(choice["token_ids"]) == 8 else "stop")
    assert len({tuple(c["token_ids"]) for c in choices}) > 1  # sampled, not six copies of one answer
    assert answer["usage"]["completion_tokens"] == sum(len(c["token_ids"]) for c in choices)
    again = requests.post(f"{server.base_url}/v1/completions", json=body, timeout=60).json()
    assert [c["token_ids"] for c in again["choices"]] == [c["token_ids"] for c in choices]
    # The official client reads the same response (the extra fields ride along).
    many = client.completions.create(model="alpha", prompt=PROMPT, n=3, max_tokens=4, temperature=1.0, seed=1)
    assert len(many.choices) == 3 and all(isinstance(c.text, str) for c in many.choices)
    chat = client.chat.completions.create(model="alpha", messages=MESSAGES, n=2, max_tokens=4, temperature=1.0)
    assert len(chat.choices) == 2 and chat.choices[1].message.role == "assistant"


def test_a_list_of_prompts_is_one_batch_answered_prompt_by_prompt(server, client, in_process, spec):
    """A GRPO step's rollouts in one request: prompts of different lengths (the shorter left-padded
    in the batch) each get the completions they would get alone, choice i * n + j the j-th of
    prompt i, as vLLM orders them; strings and token ids alike."""
    from transformers import AutoTokenizer

    prompts = [PROMPT, "A longer prompt than the first one, with more words in it, is here"]
    answer = client.completions.create(model="alpha", prompt=prompts, n=2, max_tokens=16, temperature=0)
    assert [c.index for c in answer.choices] == [0, 1, 2, 3]
    assert [c.text for c in answer.choices] == [in_process("alpha", prompt=p) for p in prompts for _ in range(2)]
    tokenizer = AutoTokenizer.from_pretrained(spec.model_dir)
    ids = [tokenizer(p)["input_ids"] for p in prompts]
    body = {"model": "alpha", "prompt": ids, "n": 3, "max_tokens": 8, "temperature": 1.0, "seed": 5,
            "return_token_ids": True}
    choices = requests.post(f"{server.base_url}/v1/completions", json=body, timeout=60).json()["choices"]
    assert [c["prompt_token_ids"] for c in choices] == [ids[0]] * 3 + [ids[1]] * 3
    again = requests.post(f"{server.base_url}/v1/completions", json=body, timeout=60).json()["choices"]
    assert [c["token_ids"] for c in again] == [c["token_ids"] for c in choices]  # a seeded batch repeats


def test_update_weights_replaces_every_base_weight(server, base_spec, tmp_path):
    """The old way of syncing a rollout server (all weights, bench/grpo_handoff.py's baseline)."""
    from safetensors.torch import save_file

    from shared.models.loading import load_causal_lm

    refused = requests.post(f"{server.base_url}/v1/update_weights", json={"path": str(tmp_path)}, timeout=10)
    assert refused.status_code == 400 and "holds no .safetensors" in refused.json()["error"]["message"]
    state = {k: v.clone() for k, v in load_causal_lm(base_spec.model_dir, "fp32").state_dict().items()}
    (tmp_path / "same").mkdir()
    save_file(state, str(tmp_path / "same" / "model.safetensors"))
    assert requests.post(f"{server.base_url}/v1/update_weights", json={"path": str(tmp_path / "same")},
                         timeout=10).status_code == 400  # adapter alpha is loaded on this server
    bare = ServingProcess(base_spec, tmp_path / "bare").start().wait_ready()
    try:
        client = OpenAI(base_url=f"{bare.base_url}/v1", api_key="x", max_retries=0, timeout=30)
        before = complete(client).choices[0].text
        (tmp_path / "changed").mkdir()
        negated = {k: (-v if k == "model.norm.weight" else v) for k, v in state.items()}  # logits negated
        save_file(negated, str(tmp_path / "changed" / "w.safetensors"))
        for directory, same in (("changed", False), ("same", True)):
            answer = requests.post(f"{bare.base_url}/v1/update_weights", json={"path": str(tmp_path / directory)},
                                   timeout=30)
            assert answer.status_code == 200 and answer.json()["tensors"] == len(state)
            assert (complete(client).choices[0].text == before) is same
    finally:
        bare.terminate()


def test_concurrent_requests_get_their_solo_answers(client):
    prompts = [PROMPT, "The quick brown fox", "Please reverse this word.", "0123456789"]
    solo = {p: complete(client, "alpha", prompt=p).choices[0].text for p in prompts}
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda p: complete(client, "alpha", prompt=p).choices[0].text, prompts * 2))
    assert together == [solo[p] for p in prompts * 2]


def test_adapters_load_and_unload_at_run_time(server, client, in_process, adapter_dirs):
    url = server.base_url
    loaded = requests.post(f"{url}/v1/load_lora_adapter", json={"lora_name": "beta", "lora_path": str(adapter_dirs["beta"])})
    assert loaded.status_code == 200, loaded.text
    assert {m.id for m in client.models.list().data} == {SERVED_NAME, "alpha", "beta"}
    beta = complete(client, "beta").choices[0].text
    assert beta == in_process("beta", prompt=PROMPT)
    assert beta not in (complete(client, SERVED_NAME).choices[0].text, complete(client, "alpha").choices[0].text)

    again = requests.post(f"{url}/v1/load_lora_adapter", json={"lora_name": "beta", "lora_path": str(adapter_dirs["beta"])})
    assert again.status_code == 400 and "already been loaded" in again.json()["error"]["message"]
    nowhere = requests.post(f"{url}/v1/load_lora_adapter", json={"lora_name": "gamma", "lora_path": "/nonexistent"})
    assert nowhere.status_code == 400

    for name in ("beta", "alpha"):  # the last one out leaves the bare base model serving
        assert requests.post(f"{url}/v1/unload_lora_adapter", json={"lora_name": name}).status_code == 200
    assert [m.id for m in client.models.list().data] == [SERVED_NAME]
    with pytest.raises(openai.NotFoundError):
        complete(client, "beta")
    assert complete(client).choices[0].text == in_process(SERVED_NAME, prompt=PROMPT)
    assert requests.post(f"{url}/v1/unload_lora_adapter", json={"lora_name": "beta"}).status_code == 404
    reloaded = requests.post(f"{url}/v1/load_lora_adapter", json={"lora_name": "alpha", "lora_path": str(adapter_dirs["alpha"])})
    assert reloaded.status_code == 200 and complete(client, "alpha").choices[0].text == in_process("alpha", prompt=PROMPT)


@pytest.mark.parametrize(
    ("path", "body", "status", "words"),
    [
        ("/v1/completions", "not json", 400, "must be a JSON object"),
        ("/v1/completions", {"model": "nope", "prompt": "x"}, 404, "The model `nope` does not exist."),
        ("/v1/completions", {"prompt": "x", "n": 2, "stream": True}, 400, "n must be 1 when streaming"),
        ("/v1/completions", {"prompt": "x", "n": 0}, 400, "n must be a whole number between 1 and 256"),
        ("/v1/completions", {"prompt": "x", "temperature": 5}, 400, "temperature must be between"),
        ("/v1/completions", {"prompt": "x", "max_tokens": 0}, 400, "max_tokens must be at least 1"),
        ("/v1/completions", {"prompt": "x", "max_tokens": 5000}, 400, "maximum context length is 2048"),
        ("/v1/completions", {"prompt": 3}, 400, "prompt must be"),
        ("/v1/completions", {"prompt": []}, 400, "prompt must be a string, a list of token ids, or a list of 1 to 256"),
        ("/v1/completions", {"prompt": ["x", [1, 2]]}, 400, "prompt must be"),
        ("/v1/completions", {"prompt": [[1, 2], []]}, 400, "the prompt is empty"),
        ("/v1/completions", {"prompt": ["x"] * 65, "n": 4}, 400,
         "n times the number of prompts must be at most 256 on this server, got 4 x 65"),
        ("/v1/completions", {"prompt": ["x", "y"], "stream": True}, 400, "several prompts cannot stream"),
        ("/v1/chat/completions", {"messages": []}, 400, "messages must be a non-empty list"),
        ("/v1/unload_lora_adapter", {}, 400, "'lora_name' must be provided"),
        ("/v1/nowhere", {}, 404, "Not Found"),
    ],
)
def test_bad_requests_are_4xx_in_openai_shape(server, path, body, status, words):
    kwargs = {"data": body} if isinstance(body, str) else {"json": body}
    response = requests.post(f"{server.base_url}{path}", timeout=10, **kwargs)
    assert response.status_code == status
    error = response.json()["error"]
    assert words in error["message"] and error["code"] == status and error["type"]
    assert "Traceback" not in response.text


@pytest.mark.parametrize("body, words", [
    ('{"prompt": ' + "[" * 50_000 + "]" * 50_000 + "}", "nests lists and objects more than 64 levels deep"),
    ('{"prompt": "x\\udc00"}', "field prompt holds a lone surrogate (\\udc00)"),
])
def test_bodies_no_tokenizer_reads_are_4xx_in_openai_shape(server, body, words):
    response = requests.post(f"{server.base_url}/v1/completions", data=body, timeout=10,
                             headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert words in error["message"] and error["code"] == 400 and error["type"] == "BadRequestError"


def test_sigterm_while_loading_exits_zero(spec, tmp_path):
    proc = ServingProcess(spec, tmp_path).start()
    proc.wait_for_log("loading model")  # its signal handlers are in place from here on
    with pytest.raises(requests.ConnectionError):  # the port opens only once the model is loaded
        requests.get(f"{proc.base_url}/health", timeout=1)
    assert proc.terminate() == 0


def test_sigterm_exits_zero_even_while_generating(server, client):
    """Last in the file: it stops the module's server, in the middle of a long streamed answer."""
    stream = client.completions.create(model=SERVED_NAME, prompt=PROMPT, max_tokens=1500, temperature=0, stream=True)
    next(iter(stream))
    assert server.terminate() == 0
    assert '"event": "stopping"' in server.log()


def test_with_a_key_only_requests_that_carry_it_are_served(base_spec, tmp_path):
    """The endpoint manager and a grpo run start their serving processes with a secret (in the
    environment, not on the command line); a request to the port without it is refused in the
    OpenAI error shape, and the managers' /health probe needs none."""
    server = ServingProcess(base_spec, tmp_path, api_key="s3cret-key").start().wait_ready()
    try:
        body = {"model": SERVED_NAME, "prompt": "Reverse: stone", "max_tokens": 2, "temperature": 0}
        refused = requests.post(f"{server.base_url}/v1/completions", json=body, timeout=30)
        assert refused.status_code == 401 and refused.json() == {"error": {
            "message": reasons.SERVING_KEY_REQUIRED, "type": "AuthenticationError", "param": None, "code": 401}}
        wrong = requests.post(f"{server.base_url}/v1/models", headers={"Authorization": "Bearer nope"}, timeout=30)
        assert wrong.status_code == 401 and requests.get(f"{server.base_url}/v1/models", timeout=30).status_code == 401
        served = requests.post(f"{server.base_url}/v1/completions", json=body, timeout=60,
                               headers={"Authorization": "Bearer s3cret-key"})
        assert served.status_code == 200 and served.json()["choices"]
        assert requests.get(f"{server.base_url}/health", timeout=5).status_code == 200
        assert "s3cret-key" not in " ".join(server.proc.args)  # not on its command line
        assert reasons.SERVING_KEY_REQUIRED == (
            "this serving process answers only requests that carry its key; send them through the trainer")
    finally:
        server.terminate()


def test_a_folding_server_serves_each_adapter_it_is_handed_in_place_of_the_last(base_spec, adapter_dirs, in_process,
                                                                                tmp_path):
    """adapterMode folded (a rollout server): the adapter handed over is folded into the weights in
    place of the one before, answers as the unmerged adapter does (greedy, fp32), and the base
    model is refused until the adapter is unloaded, which gives the base weights back."""
    spec = dataclasses.replace(base_spec, adapters={"policy-0": str(adapter_dirs["alpha"])}, adapter_mode="folded")
    server = ServingProcess(spec, tmp_path, cpu_threads=1).start().wait_ready()
    try:
        client = OpenAI(base_url=f"{server.base_url}/v1", api_key="x", max_retries=0, timeout=30)
        assert complete(client, "policy-0").choices[0].text == in_process("alpha", prompt=PROMPT)
        loaded = requests.post(f"{server.base_url}/v1/load_lora_adapter", timeout=30,
                               json={"lora_name": "policy-1", "lora_path": str(adapter_dirs["beta"])})
        assert loaded.status_code == 200
        assert loaded.text == "Success: LoRA adapter 'policy-1' added successfully (folded in place of 'policy-0')."
        assert [m.id for m in client.models.list().data] == [SERVED_NAME, "policy-1"]
        assert complete(client, "policy-1").choices[0].text == in_process("beta", prompt=PROMPT)
        with pytest.raises(openai.NotFoundError):
            complete(client, "policy-0")
        with pytest.raises(openai.BadRequestError) as refused:
            complete(client)
        assert refused.value.body["message"] == reasons.folded_server_serves_only("policy-1", SERVED_NAME)
        assert requests.post(f"{server.base_url}/v1/unload_lora_adapter", json={"lora_name": "policy-1"},
                             timeout=30).status_code == 200
        assert complete(client).choices[0].text == in_process(SERVED_NAME, prompt=PROMPT)
    finally:
        server.terminate()
