"""A toy GRPO task the built-in tiny model learns in a few steps on a CPU, and jobs that train on it.

The task: one prompt, whose reward is an exact match with one token's text. That token is chosen
from the untrained model itself: the likeliest next token with a visible text, which it samples only
a few percent of the time at temperature 1. So the exact-match reward starts low, every group of 8
has a fair chance of holding a rewarded completion, and GRPO has something to learn.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from services.trainer_worker.engines.base import Restore, TrainingJob
from tests.shared.plans.plan_fixtures import typed

PROMPT = "What is the answer?"

GRPO_PLAN = {
    "method": "grpo",
    "model": "builtin/tiny-qwen3",
    "precision": "fp32",
    "adapter": {"rank": 8, "alpha": 16, "dropout": 0.0, "targetModules": "all-linear"},
    "hyperparameters": {
        "learningRate": 0.005, "maxSteps": 12, "epochs": None, "batchSize": 16, "gradientAccumulation": 1,
        "warmupSteps": 0, "seed": 42, "maxSeqLength": 256,
    },
    "grpo": {"klPenalty": 0.0, "numGenerations": 8, "maxCompletionLength": 1, "temperature": 1.0,
             "rewards": [{"function": "exact_match", "weight": 1.0}]},
    "snapshots": {"everySteps": None},
    "execution": {"gpus": 1},
}


def toy_answer(model_dir: Path) -> tuple[str, float]:
    """The untrained model's likeliest visible next token after PROMPT, and its probability."""
    import torch

    from shared.models.loading import load_causal_lm, load_tokenizer

    tokenizer, model = load_tokenizer(model_dir), load_causal_lm(model_dir, "fp32")
    ids = tokenizer(PROMPT, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        probabilities = model(torch.tensor([ids])).logits[0, -1].softmax(-1)
    for token in probabilities.argsort(descending=True).tolist():
        text = tokenizer.decode([token], skip_special_tokens=True).strip()
        if text and "\ufffd" not in text:
            return text, float(probabilities[token])
    raise AssertionError("no visible token")


def write_toy_dataset(path: Path, answer: str, rows: int = 8) -> Path:
    path.write_text("".join(json.dumps({"prompt": PROMPT, "answer": answer}) + "\n" for _ in range(rows)))
    return path


def grpo_job(model_dir: Path, work_dir: Path, dataset: Path, *, restore: Restore | None = None,
             every_steps: int | None = None, kl: float = 0.0, rewards: list | None = None, run_id: str = "run-grpo",
             judge_address=None, reward_functions: dict | None = None, **hyper) -> TrainingJob:
    plan = copy.deepcopy(GRPO_PLAN)
    plan["hyperparameters"].update(hyper)
    plan["snapshots"]["everySteps"] = every_steps
    plan["grpo"]["klPenalty"] = kl
    if rewards is not None:
        plan["grpo"]["rewards"] = rewards
    return TrainingJob(run_id, typed(plan), "grpo-single", model_dir, dataset, work_dir, ["cpu:0"], restore=restore,
                       judge_address=judge_address, reward_functions=reward_functions or {})
