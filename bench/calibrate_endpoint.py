"""bench/gpu_calibrate.py, part (b): an endpoint through the built-in serving process, against a bare
transformers `generate` loop on the same model in the same run.

The serving process is started as the endpoint manager starts it (shared.serving.backends.BuiltinBackend,
a load spec in bf16 on the device, one LoRA adapter loaded at start, adapters unmerged as endpoints
serve them). Time to READY runs from its start to the first 200 of GET /health. Then, for the base
model and for the adapter, streamed `/v1/completions` (greedy, up to 64 tokens) with 1 request at a
time and with 8 at once: per request its latency (to the last event) and time to its first text,
p50 and p95, and output tokens/s (every request's tokens over the wall time of the round). The
built-in server generates one request at a time (its batch-invariance: shared/serving/generation.py),
so 8 at once queue behind each other; vLLM, which batches them, cannot be brought to the GPU machine.

The bare loop runs in this process on the same weights: `model.generate` greedy, one prompt at a
time and the 8 prompts in one left-padded batch, through PEFT for the adapter.
"""

from __future__ import annotations

import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.calibrate_kit import PROMPTS, Context, child_env, free_cuda, median, percentile

ROOT = Path(__file__).resolve().parents[1]
READY_TIMEOUT_S = 300.0
REQUEST_TIMEOUT_S = 300.0


def sizes(ctx: Context) -> dict[str, int]:
    """Tokens per completion, requests one at a time, rounds of 8 at once."""
    return {"max_tokens": 8, "sequential": 2, "rounds": 1, "concurrent": 2} if ctx.dry_run else \
        {"max_tokens": 64, "sequential": 4, "rounds": 1, "concurrent": 8}


def make_adapter(model, target: Path, *, rank: int) -> Any:
    """A rank-`rank` LoRA adapter on every linear layer with small random weights (so it changes
    the answers), saved to `target`; returns the PeftModel holding it."""
    import torch
    from peft import LoraConfig, get_peft_model

    peft_model = get_peft_model(model, LoraConfig(r=rank, lora_alpha=2 * rank, target_modules="all-linear",
                                                  task_type="CAUSAL_LM"))
    generator = torch.Generator(device="cpu").manual_seed(3)
    with torch.no_grad():
        for name, parameter in peft_model.named_parameters():
            if "lora_B" in name:
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.02)
    peft_model.save_pretrained(str(target))
    return peft_model.eval()


def stream_one(url: str, key: str, model: str, prompt: str, max_tokens: int) -> dict[str, float]:
    import requests

    body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    started = time.perf_counter()
    first = None
    tokens = 0
    with requests.post(f"{url}/v1/completions", json=body, stream=True, timeout=REQUEST_TIMEOUT_S,
                       headers={"Authorization": f"Bearer {key}"}) as response:
        response.raise_for_status()
        for raw in response.iter_lines():
            if not raw.startswith(b"data: ") or raw == b"data: [DONE]":
                continue
            event = json.loads(raw[6:])
            if "error" in event:
                raise RuntimeError(f"the server failed a streamed request: {event['error']}")
            if first is None and any(c.get("text") for c in event.get("choices", [])):
                first = time.perf_counter() - started
            if event.get("usage"):
                tokens = event["usage"]["completion_tokens"]
    return {"latency": time.perf_counter() - started, "first": first if first is not None else float("nan"),
            "tokens": tokens}


def round_figures(done: list[dict[str, float]], wall: float) -> dict[str, float]:
    latencies = [d["latency"] for d in done]
    return {"requests": len(done), "p50": percentile(latencies, 50), "p95": percentile(latencies, 95),
            "firstP50": median([d["first"] for d in done]), "tokens": sum(d["tokens"] for d in done),
            "tokensPerSecond": sum(d["tokens"] for d in done) / wall}


def server_rounds(url: str, key: str, model: str, n: dict[str, int]) -> dict[str, dict[str, float]]:
    out = {}
    started = time.perf_counter()
    done = [stream_one(url, key, model, PROMPTS[i % len(PROMPTS)], n["max_tokens"]) for i in range(n["sequential"])]
    out["1"] = round_figures(done, time.perf_counter() - started)
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(n["concurrent"] * n["rounds"])]
    with ThreadPoolExecutor(n["concurrent"]) as pool:
        started = time.perf_counter()
        done = list(pool.map(lambda p: stream_one(url, key, model, p, n["max_tokens"]), prompts))
    out[str(n["concurrent"])] = round_figures(done, time.perf_counter() - started)
    return out


def bare_rounds(model, tokenizer, device: str, n: dict[str, int]) -> dict[str, dict[str, float]]:
    """transformers' own generate: greedy, one prompt at a time, then the concurrent count in one batch."""
    import torch

    from shared.models.prompts import prompt_token_ids

    def generate(prompts: list[str]) -> tuple[float, int]:
        rows = [prompt_token_ids(tokenizer, p) for p in prompts]
        width = max(map(len, rows))
        pad = tokenizer.pad_token_id
        ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows], device=device)
        mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], device=device)
        started = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=n["max_tokens"], do_sample=False,
                                 pad_token_id=pad)
        if device == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - started, int((out[:, width:] != pad).sum())

    generate(PROMPTS[:1])  # warm-up
    figures = {}
    started = time.perf_counter()
    done = []
    for i in range(n["sequential"]):
        seconds, tokens = generate([PROMPTS[i % len(PROMPTS)]])
        done.append({"latency": seconds, "first": float("nan"), "tokens": tokens})
    figures["1"] = round_figures(done, time.perf_counter() - started)
    seconds, tokens = generate([PROMPTS[i % len(PROMPTS)] for i in range(n["concurrent"])])
    figures[f"{n['concurrent']} in one batch"] = {"requests": n["concurrent"], "p50": seconds, "p95": seconds,
                                                  "firstP50": float("nan"), "tokens": tokens,
                                                  "tokensPerSecond": tokens / seconds}
    return figures


def endpoint(ctx: Context, shape_name: str) -> dict[str, Any]:
    import contextlib
    import secrets

    import requests
    import torch

    from shared.models.load_spec import LoadSpec, model_generation_config
    from shared.models.loading import load_causal_lm, load_tokenizer
    from shared.process.ports import free_port
    from shared.serving.backends import BuiltinBackend

    model_dir = ctx.model(shape_name)
    n = sizes(ctx)
    work = ctx.work / "endpoint"
    work.mkdir(parents=True, exist_ok=True)
    tokenizer = load_tokenizer(model_dir)
    peft_model = make_adapter(load_causal_lm(model_dir, ctx.precision, device=ctx.device), work / "adapter", rank=16)
    spec = LoadSpec(model=f"bench/{shape_name}", model_dir=str(model_dir), dtype=ctx.precision,
                    generation_config=model_generation_config(model_dir), batch_invariant=True,
                    served_model_name="base", adapters={"adapter": str(work / "adapter")}, device=ctx.device)
    key, port = secrets.token_urlsafe(16), free_port()
    argv, env = BuiltinBackend(devices=[ctx.slot]).command(spec, port=port, spec_path=spec.write(work / "spec.json"),
                                                          api_key=key)
    url = f"http://127.0.0.1:{port}"
    with open(work / "server.log", "wb") as log:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=ROOT, env=child_env(env),
                                stdout=subprocess.DEVNULL, stderr=log)
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the serving process exited with {proc.returncode}: "
                                   f"{(work / 'server.log').read_text()[-1500:]}")
            with contextlib.suppress(requests.RequestException):
                if requests.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            if time.perf_counter() - started > READY_TIMEOUT_S:
                raise TimeoutError(f"the serving process was not READY in {READY_TIMEOUT_S:.0f}s")
            time.sleep(0.05)
        ready_s = time.perf_counter() - started
        served = {}
        for model in ("base", "adapter"):
            stream_one(url, key, model, PROMPTS[0], n["max_tokens"])  # warm-up: kernels chosen, allocator grown
            served[model] = server_rounds(url, key, model, n)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    bare = {}
    with peft_model.disable_adapter():
        bare["base"] = bare_rounds(peft_model, tokenizer, ctx.device, n)
    bare["adapter"] = bare_rounds(peft_model, tokenizer, ctx.device, n)
    del peft_model
    free_cuda()
    result = {"part": "endpoint", "shape": ctx.shape(shape_name).name, "readySeconds": ready_s,
              "maxTokens": n["max_tokens"], "server": served, "bare": bare, "torch": torch.__version__}
    for row in table(result):
        print(row, flush=True)
    return result


def table(result: dict[str, Any]) -> list[str]:
    rows = [f"endpoint {result['shape']}: built-in serving process READY in {result['readySeconds']:.1f}s; "
            f"streamed greedy completions of up to {result['maxTokens']} tokens",
            "| model | how | at once | requests | p50 s | p95 s | first text p50 s | output tokens/s |",
            "|---|---|---|---|---|---|---|---|"]
    for model in ("base", "adapter"):
        for how, figures in (("built-in server", result["server"][model]), ("bare generate", result["bare"][model])):
            for at_once, f in figures.items():
                rows.append(f"| {model} | {how} | {at_once} | {f['requests']} | {f['p50']:.3f} | {f['p95']:.3f} | "
                            f"{f['firstP50']:.3f} | {f['tokensPerSecond']:.0f} |")
    return rows
