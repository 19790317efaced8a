"""What both sides of bench/platform_overhead.py train on: the model, the datasets, the settings.

- **model**: a Qwen3-style causal LM built here from a config with seeded random weights and the
  built-in tiny model's tokenizer (nothing is downloaded), saved as a plain model directory that
  the trainer's catalog loads through a `path:` entry and the bare script loads with
  `from_pretrained`. SHAPES["20m"] (~20M parameters) is the benchmark's; SHAPES["tiny"] is the
  tests' (seconds).
  With `--model PATH` (`real_model`) it is instead a real model: a Hugging Face directory as it is,
  or a GGUF file converted once by the trainer's own converter (shared/models/gguf_convert.py, as
  `training base-models import` does), both sides loading the same directory.
- **datasets**: seeded synthetic rows, `prompt` + `completion` for SFT (TRL masks the prompt the
  same way on both sides: the trainer passes such rows to SFTTrainer as they are) and `prompt`
  only for GRPO.
- **settings**: one dict of the numbers both sides train with (`plan()` turns it into the
  trainer's plan, bench/bare_trl.py into TRL configs).
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

from shared.models.tiny_models import ensure_builtin
from shared.store.artifacts import ArtifactRoot

SHAPES: dict[str, dict[str, int]] = {
    # ~20M parameters: a step is a few hundred ms of compute per core, not fixed costs
    "20m": dict(hidden_size=512, num_hidden_layers=6, num_attention_heads=8, num_key_value_heads=4, head_dim=64,
                intermediate_size=1536),
    # the tests' setting: a step is milliseconds
    "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                 intermediate_size=128),
}

WORDS = ("the quick brown fox jumps over a lazy dog while seven bright stars watch from far above and "
         "every river runs down to the sea where old ships wait for morning light to carry them home").split()


def build_model(target: Path, shape: str) -> int:
    """A Qwen3-style model of SHAPES[shape] with seeded random weights (the same bytes every time)
    and the tiny model's tokenizer, saved to `target`. Returns its parameter count."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    tiny = ensure_builtin("tiny-qwen3", ArtifactRoot(target.parent / "tiny-artifacts"))
    config = AutoConfig.from_pretrained(tiny)
    for key, value in SHAPES[shape].items():
        setattr(config, key, value)
    config.layer_types = ["full_attention"] * SHAPES[shape]["num_hidden_layers"]
    config.initializer_range = 0.02
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config)
    model.save_pretrained(str(target), safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja",
                 "generation_config.json"):
        if (tiny / name).exists():
            shutil.copy2(tiny / name, target / name)
    return sum(p.numel() for p in model.parameters())


def real_model(source: Path, work: Path) -> tuple[Path, int]:
    """A real model's directory (a GGUF file converted into `work`) and its parameter count, read
    from its own files as the catalog reads them (shared/models/facts.py)."""
    import subprocess
    import sys

    from shared.models.facts import read_model_facts

    directory = source
    if source.is_file():
        directory = work / "model"
        subprocess.run([sys.executable, "-m", "shared.models.gguf_convert", str(source), str(directory)], check=True,
                       cwd=str(Path(__file__).resolve().parents[1]))
    return directory, int(read_model_facts(directory, model=source.name)["parameters"])


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def write_sft_dataset(path: Path, rows: int, words: int) -> Path:
    """`rows` prompt + completion rows of about `words` words each, the same every time."""
    rng = random.Random(0)
    path.write_text("".join(json.dumps({"prompt": _text(rng, words // 3) + " ->",
                                        "completion": " " + _text(rng, words - words // 3)}) + "\n"
                            for _ in range(rows)))
    return path


def write_prompt_dataset(path: Path, rows: int, words: int) -> Path:
    rng = random.Random(1)
    path.write_text("".join(json.dumps({"prompt": _text(rng, words)}) + "\n" for _ in range(rows)))
    return path


def settings(*, method: str, steps: int, slots: int, batch: int, max_length: int, rank: int = 16,
             generations: int = 4, completion_tokens: int = 16) -> dict[str, Any]:
    """The numbers both sides train with."""
    return {"method": method, "steps": steps, "slots": slots, "batch": batch, "maxLength": max_length,
            "rank": rank, "alpha": 2 * rank, "learningRate": 1e-4, "seed": 7, "generations": generations,
            "completionTokens": completion_tokens, "temperature": 1.0, "lengthTarget": 24}


def plan(s: dict[str, Any], *, model: str, dataset: str) -> dict[str, Any]:
    """The trainer's plan for the same settings."""
    body: dict[str, Any] = {
        "method": s["method"], "model": model, "dataset": dataset, "precision": "fp32",
        "execution": {"gpus": s["slots"]},
        "adapter": {"rank": s["rank"], "alpha": s["alpha"], "dropout": 0.0, "targetModules": "all-linear"},
        "hyperparameters": {"learningRate": s["learningRate"], "maxSteps": s["steps"], "batchSize": s["batch"],
                            "gradientAccumulation": 1, "warmupSteps": 0, "seed": s["seed"],
                            "maxSeqLength": s["maxLength"]},
    }
    if s["method"] == "grpo":
        body["grpo"] = {"klPenalty": 0.0, "numGenerations": s["generations"],
                        "maxCompletionLength": s["completionTokens"], "temperature": s["temperature"],
                        "rewards": [{"function": "length", "target": s["lengthTarget"], "weight": 1.0}]}
    return body
