"""The GPU check's `tokens-per-second-8b` (bench/gpu_check.py): a LoRA over a Qwen3-8B-shaped model
through the project's `sft-single` engine against a bare TRL `SFTTrainer` script, alternating.

- **model**: the published Qwen3-8B config (QWEN3_8B: 36 layers, hidden 4096, FFN 12288, 32 heads,
  8 KV heads of 128, vocab 151,936, rope theta 1e6, untied head; 8.19B parameters) with seeded
  random bf16 weights made on the GPU itself (`build_model`: `from_config` under a
  `torch.device("cuda")` context, nothing materialised on the CPU, nothing downloaded);
- **tokenizer**: built here (`build_tokenizer`): one token per word over words `w0`, `w1`, ... and
  Qwen's special tokens, exactly the config's vocabulary size, with Qwen's chat template;
- **rows**: seeded prompt + completion rows whose token counts spread evenly from an eighth of the
  sequence length to the whole of it (256..2048 tokens), the same rows for both sides;
- **engine**: `engines.train` on an sft-single job (bf16, packing, rank 16 on every linear layer,
  2 sequences of 2,048 tokens a step); its model loader alone is replaced (`random_weights_loader`):
  the weights come from `build_model` on the job's device instead of safetensors on disk, so that
  16 GB are neither written nor read four times. Everything else (tokenizer, packing, LoRA, trainer
  arguments, activation checkpointing chosen from the memory estimate, the reporter callback) is
  the engine's own;
- **bare**: what a user's script would write: the same model object, rows, batch, length, learning
  rate, steps and LoRA, every other SFTConfig field TRL's default (bf16, activation checkpointing,
  no packing: padding to the longest row of the batch).

On CPU (a dry run) the same code runs on TINY, a Qwen3 of the same family at toy size, with short rows.
"""

from __future__ import annotations

import gc
import json
import random
import statistics
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.gpu_throughput import (
    WARMUP_STEPS,
    TimedReporter,
    bare_sft_run,
    engine_tokens_per_second,
    finite,
    lora_training_flops,
    mean_context,
)
from services.trainer_worker.engines import kit, train
from shared.models.tiny_models import CHAT_TEMPLATE, IM_END, IM_START, PAD_TOKEN
from shared.planning.resolver import GIB, trainer_memory_gib
from shared.plans import TrainingPlan
from tests.shared.plans.plan_fixtures import amended
from tests.trainer_worker.doubles import make_job

# Qwen/Qwen3-8B's config.json, as published
QWEN3_8B = dict(vocab_size=151936, hidden_size=4096, intermediate_size=12288, num_hidden_layers=36,
                num_attention_heads=32, num_key_value_heads=8, head_dim=128, rope_theta=1_000_000.0,
                max_position_embeddings=40960, tie_word_embeddings=False, rms_norm_eps=1e-6, attention_bias=False,
                hidden_act="silu", initializer_range=0.02)
# The dry run's: the same family (untied head, grouped KV, FFN 3 x hidden) at toy size
TINY = {**QWEN3_8B, "vocab_size": 2048, "hidden_size": 64, "intermediate_size": 192, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 16}
H200_BF16_PEAK = 989e12  # dense bf16 FLOP/s, the H100/H200 SXM datasheet's (about 790 measured here: docs)
UNK = "<unk>"
PROMPT_WORDS = 16
RANK = 16
MODEL_NAME = "check/qwen3-8b-shape"


@dataclass(frozen=True)
class Sizes:
    shape: dict[str, Any]
    seq: int  # maxSeqLength
    batch: int  # sequences per step (one GPU: the micro-batch)
    steps: int  # per run, the WARMUP_STEPS included
    rows: int


CUDA_SIZES = Sizes(QWEN3_8B, seq=2048, batch=2, steps=WARMUP_STEPS + 12, rows=96)
DRY_SIZES = Sizes(TINY, seq=128, batch=2, steps=WARMUP_STEPS + 3, rows=40)


def build_tokenizer(vocab_size: int):
    """One token per word: Qwen's special tokens, an unknown token, the chat roles, then `w0`, `w1`,
    ... up to exactly `vocab_size` tokens; Qwen's chat template."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = [PAD_TOKEN, IM_START, IM_END, UNK]
    fixed = [*specials, "system", "user", "assistant"]
    vocab = {token: i for i, token in enumerate(fixed)}
    vocab.update({f"w{k}": len(fixed) + k for k in range(vocab_size - len(fixed))})
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.add_special_tokens(specials)
    wrapped = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=IM_END, pad_token=PAD_TOKEN, unk_token=UNK,
                                      additional_special_tokens=[IM_START], model_max_length=40960)
    wrapped.chat_template = CHAT_TEMPLATE
    return wrapped


def write_model_dir(target: Path, shape: dict[str, Any]) -> Path:
    """config.json and the tokenizer, no weights (`build_model` makes them where they train)."""
    from transformers import Qwen3Config

    tokenizer = build_tokenizer(shape["vocab_size"])
    config = Qwen3Config(**shape, bos_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    config.save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target


def build_model(model_dir: Path, precision: str, device: str):
    """The model of `model_dir`'s config with seeded random weights, made on `device` in `precision`."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from shared.models.loading import torch_dtype

    config = AutoConfig.from_pretrained(model_dir)
    torch.manual_seed(0)
    with torch.device(device):
        return AutoModelForCausalLM.from_config(config, dtype=torch_dtype(precision))


@contextmanager
def random_weights_loader():
    """The engine loads its base model through kit.load_causal_lm; here it gets `build_model`'s.
    Yields a dict that then holds the attention implementation the model was made with."""
    real, seen = kit.load_causal_lm, {}

    def load(model_dir, precision, device="cpu"):
        model = build_model(Path(model_dir), precision, device)
        seen["attention"] = model.config._attn_implementation
        return model

    kit.load_causal_lm = load
    try:
        yield seen
    finally:
        kit.load_causal_lm = real


def write_rows(path: Path, sizes: Sizes) -> list[int]:
    """Prompt + completion rows of words; returns each row's token count (the EOS TRL appends included)."""
    rng = random.Random(0)
    words = sizes.shape["vocab_size"] - 7  # w0 .. w(N-1) after the fixed tokens
    lengths, lines = [], []
    for i in range(sizes.rows):
        # token counts spread evenly over [seq / 8, seq]: what packing and padding each make of them
        total = sizes.seq // 8 + (i * 7919) % (sizes.seq - sizes.seq // 8 + 1)
        body = [f"w{rng.randrange(words)}" for _ in range(total - 1)]  # and the EOS
        lines.append(json.dumps({"prompt": " ".join(body[:PROMPT_WORDS]),
                                 "completion": " " + " ".join(body[PROMPT_WORDS:])}))
        lengths.append(total)
    path.write_text("\n".join(lines) + "\n")
    return lengths


def _free(device: str) -> float:
    """Collect what the last run left and return the GiB still allocated (0 on CPU)."""
    import torch

    gc.collect()
    if device != "cuda":
        return 0.0
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    return torch.cuda.memory_allocated() / GIB


def _peak(device: str) -> float | None:
    import torch

    return torch.cuda.max_memory_allocated() / GIB if device == "cuda" else None


def engine_run(setup_device: str, model_dir: Path, dataset: Path, work: Path, sizes: Sizes) -> dict[str, Any]:
    job = make_job(model_dir, work, dataset=dataset, run_id=f"run-check-8b-{work.name}", every_steps=None,
                   maxSteps=sizes.steps, batchSize=sizes.batch, maxSeqLength=sizes.seq, learningRate=1e-4,
                   warmupSteps=0, packing=True)
    job.plan = amended(job.plan, {"precision": "bf16", "model": MODEL_NAME, "adapter": {
        "rank": RANK, "alpha": 2 * RANK, "dropout": 0.0, "targetModules": "all-linear"}})
    job.devices = ["cuda:0" if setup_device == "cuda" else "cpu:0"]
    reporter = TimedReporter()
    with random_weights_loader() as seen:
        result = train(job, reporter)
    losses = [p["loss"] for p in reporter.points]
    checkpointing = any(m.startswith("activation checkpointing on") for _, m in reporter.events)
    return {"tokensPerSecond": engine_tokens_per_second(reporter), "trained": result.final_step == sizes.steps
            and finite(losses), "checkpointing": checkpointing, "plan": job.plan.to_dict(), "attention": seen.get("attention"),
            "events": [m for _, m in reporter.events if m.startswith(("training ", "activation"))]}


def bare_run(device: str, model_dir: Path, rows_file: Path, work: Path, sizes: Sizes) -> dict[str, Any]:
    from transformers import AutoTokenizer

    rows = [json.loads(line) for line in rows_file.read_text().splitlines() if line.strip()]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = build_model(model_dir, "bf16", device)  # what from_pretrained(dtype=bfloat16, device_map=...) gives
    run = bare_sft_run(model=model, tokenizer=tokenizer, rows=rows, work=work, device=device,
                       config=dict(max_steps=sizes.steps, per_device_train_batch_size=sizes.batch,
                                   max_length=sizes.seq, learning_rate=1e-4, seed=42),
                       peft=dict(r=RANK, lora_alpha=2 * RANK, lora_dropout=0.0, target_modules="all-linear"))
    return {"tokensPerSecond": run.tokens_per_second, "trained": len(run.losses) == sizes.steps and finite(run.losses),
            "checkpointing": True, "attention": model.config._attn_implementation}  # TRL's default


def check_8b(device: str, work: Path, say=print) -> tuple[str, str]:
    """(status, detail) of tokens-per-second-8b; `say` prints each run's figures as they come."""
    from transformers import AutoConfig

    sizes = CUDA_SIZES if device == "cuda" else DRY_SIZES
    model_dir = write_model_dir(work / "qwen3-8b-shape", sizes.shape)
    rows_file = work / "rows-8b.jsonl"
    lengths = write_rows(rows_file, sizes)
    config = AutoConfig.from_pretrained(model_dir)
    flops = lora_training_flops(config, rank=RANK, context=mean_context([min(n, sizes.seq) for n in lengths]))
    runs: dict[str, list[dict[str, Any]]] = {"engine": [], "bare": []}
    for trial in range(2):
        for side in ("engine", "bare"):
            left = _free(device)
            one = (engine_run(device, model_dir, rows_file, work / f"engine-{trial}", sizes) if side == "engine"
                   else bare_run(device, model_dir, rows_file, work / f"bare-{trial}", sizes))
            one["peakGiB"], one["leftGiB"] = _peak(device), left
            runs[side].append(one)
            peak = "n/a on CPU" if one["peakGiB"] is None else f"{one['peakGiB']:.1f} GiB"
            say(f"  8b {side} run {trial + 1}: {one['tokensPerSecond']:.0f} tokens/s, peak {peak} "
                f"(left allocated before it: {left:.1f} GiB), checkpointing {one['checkpointing']}, "
                f"trained {one['trained']}")
    for event in runs["engine"][0]["events"]:
        say(f"  8b engine: {event}")
    return verdict(device, sizes, config, flops, runs)


def verdict(device: str, sizes: Sizes, config, flops: dict[str, float],
            runs: dict[str, list[dict[str, Any]]]) -> tuple[str, str]:
    speed = {side: statistics.mean(r["tokensPerSecond"] for r in rs) for side, rs in runs.items()}
    ratio = speed["engine"] / speed["bare"]
    facts = {"parameters": _parameters(config), "hiddenSize": config.hidden_size,
             "layers": config.num_hidden_layers, "vocabSize": config.vocab_size}
    plan = TrainingPlan.from_dict(runs["engine"][0]["plan"])
    estimate = {side: trainer_memory_gib(plan, model=facts, activation_checkpointing=rs[0]["checkpointing"])
                for side, rs in runs.items()}

    def memory(side: str) -> str:
        peaks = [r["peakGiB"] for r in runs[side] if r["peakGiB"] is not None]
        peak = f"peak {max(peaks):.1f} GiB" if peaks else "peak n/a on CPU"
        return f"{peak}, resolver estimate {estimate[side]:.1f} GiB"

    def mfu(side: str) -> str:
        return f"{100 * speed[side] * flops['perToken'] / H200_BF16_PEAK:.3g}%"

    detail = (f"{_parameters(config) / 1e6:,.4g}M params, {sizes.batch} x {sizes.seq} tokens a step, attention "
              f"{runs['engine'][0]['attention']}: engine "
              f"{speed['engine']:.0f} tokens/s/GPU, bare TRL {speed['bare']:.0f}, ratio {ratio:.2f} (goal >= 0.95); "
              f"MFU engine {mfu('engine')}, bare {mfu('bare')} ({flops['perToken'] / 1e9:.3g} GFLOP/token "
              f"over {H200_BF16_PEAK / 1e12:.0f} TFLOP/s); memory engine {memory('engine')} "
              f"(checkpointing {'on' if runs['engine'][0]['checkpointing'] else 'off'}), bare {memory('bare')} "
              "(checkpointing on)")
    trained = all(r["trained"] for rs in runs.values() for r in rs)
    if not trained:
        return "FAIL", f"{detail}: a run did not reach its last step with finite losses"
    return "PASS", detail


def _parameters(config) -> int:
    h, i, layers, v = config.hidden_size, config.intermediate_size, config.num_hidden_layers, config.vocab_size
    q, kv = config.num_attention_heads * config.head_dim, config.num_key_value_heads * config.head_dim
    per_layer = 2 * h * q + 2 * h * kv + 3 * h * i + 2 * config.head_dim + 2 * h
    return layers * per_layer + v * h * (1 if config.tie_word_embeddings else 2) + h
