"""How bench/gpu_check.py's two tokens/s checks time a run and count its work.

- `TimedReporter` + `engine_tokens_per_second`: the engine's side, from the metrics points it
  reports (each step's tokensPerSecond, its real tokens over the seconds since the step before);
- `bare_sft_run`: a bare TRL `SFTTrainer` on the same model, rows and LoRA, timed by a callback that
  reads the clock (after a CUDA synchronize) and the Trainer's own count of real tokens at each step;
- `lora_training_flops`: the model FLOPs one trained token costs (the formula is in docs/gpu-check.md).

Both sides leave the first WARMUP_STEPS out: they pay for allocation and kernel selection.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.trainer_worker.doubles import RecordingReporter

WARMUP_STEPS = 2


class TimedReporter(RecordingReporter):
    """The engine tests' reporter, also noting when each step's metrics arrive (the engine reports
    a step as soon as the Trainer logs it)."""

    def __init__(self):
        super().__init__()
        self.arrived: list[float] = []

    def metrics(self, point):
        self.arrived.append(time.perf_counter())
        super().metrics(point)


def engine_tokens_per_second(reporter: TimedReporter) -> float:
    """The tokens of the steps after the warm-up (each step's tokensPerSecond x its interval, the
    interval it was measured over) over the time from the end of the warm-up to the last step."""
    arrived = reporter.arrived
    tokens = sum(p["tokensPerSecond"] * (arrived[i] - arrived[i - 1])
                 for i, p in enumerate(reporter.points) if i >= WARMUP_STEPS)
    return tokens / (arrived[-1] - arrived[WARMUP_STEPS - 1])


@dataclass
class BareRun:
    tokens_per_second: float
    losses: list[float] = field(default_factory=list)


def bare_sft_run(*, model, tokenizer, rows: list[dict[str, Any]], work: Path, device: str,
                 config: dict[str, Any], peft: dict[str, Any]) -> BareRun:
    """TRL's SFTTrainer as a user's script calls it: `config` are the SFTConfig fields the script
    sets (anything else is TRL's default), `peft` the LoraConfig's. Tokens per second over the steps
    after the warm-up, from the Trainer's count of real (non-padding) tokens: counting is all that
    `include_num_input_tokens_seen` changes."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import PrinterCallback, TrainerCallback
    from trl import SFTConfig, SFTTrainer

    marks: list[tuple[float, int]] = []  # (time, tokens seen) at the end of each step
    losses: list[float] = []

    class Clock(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if device == "cuda":
                torch.cuda.synchronize()
            marks.append((time.perf_counter(), int(state.num_input_tokens_seen)))

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                losses.append(float(logs["loss"]))

    args = SFTConfig(output_dir=str(work), use_cpu=device != "cuda", save_strategy="no", report_to="none",
                     disable_tqdm=True, logging_steps=1, include_num_input_tokens_seen="non_padding", **config)
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                         peft_config=LoraConfig(task_type="CAUSAL_LM", **peft), callbacks=[Clock()])
    trainer.remove_callback(PrinterCallback)  # its log lines only (the engine's runs print none either)
    trainer.train()
    (start, before), (end, after) = marks[WARMUP_STEPS - 1], marks[-1]
    return BareRun(tokens_per_second=(after - before) / (end - start), losses=losses)


def finite(losses: list[float]) -> bool:
    return bool(losses) and all(math.isfinite(x) for x in losses)


# --- Counting the work


def lora_training_flops(config, *, rank: int, context: float) -> dict[str, float]:
    """Model FLOPs per trained token of a LoRA over a frozen Qwen3-style decoder (no recomputation
    counted: what the work needs, whatever a run spends on activation checkpointing):

    - frozen linear layers (every projection and the LM head; the embedding is a lookup): forward
      2 x their weights, backward 2 x again for the input gradients, none for weights that do not train;
    - LoRA (rank r on every linear layer but the head): forward 2 x its parameters, backward 2 x for
      the input gradients and 2 x for its own gradients;
    - attention scores and mixing: forward 4 x layers x (heads x head_dim) x the context a token sees
      (causal: half its row on average, `context`), backward twice that.
    """
    h, i, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    q = config.num_attention_heads * config.head_dim
    kv = config.num_key_value_heads * config.head_dim
    frozen = layers * (h * q + 2 * h * kv + q * h + 3 * h * i) + config.vocab_size * h
    lora = rank * layers * ((h + q) + 2 * (h + kv) + (q + h) + 2 * (h + i) + (i + h))
    attention = 4 * layers * q * context
    return {"frozenLinear": frozen, "lora": lora, "attentionContext": context,
            "perToken": 4 * frozen + 6 * lora + 3 * attention}


def mean_context(lengths: list[int]) -> float:
    """The keys a token attends to, averaged over every token of rows of these lengths (causal
    attention within each row: token t of a row sees t + 1)."""
    return sum(n * (n + 1) / 2 for n in lengths) / sum(lengths)
