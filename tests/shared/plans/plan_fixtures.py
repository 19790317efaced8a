"""Run plans as the API stored them in each release of the plan's shape (written by that release's
`parse_plan`, with the pool and workload the API fills in), for tests that read old plans.

- FIRST: the first release: no `validation`, no `hyperparameters.trainOnPrompt` or `packing`, and
  every reward entry holding `field`, `pattern` and `target` (null when not given);
- VALIDATION: `validation` added;
- REWARD_PARAMETERS: a reward entry holds only the parameters given;
- TRAIN_ON_PROMPT: `hyperparameters.trainOnPrompt` added (`packing` came next, as today).
"""

from __future__ import annotations

import copy
from typing import Any

from shared.plans import TrainingPlan

_HYPERPARAMETERS = {"learningRate": 0.002, "epochs": 1.0, "maxSteps": None, "batchSize": 8, "gradientAccumulation": 1,
                    "warmupSteps": 0, "seed": 42, "maxSeqLength": 512}
_COMMON = {"model": "builtin/tiny-qwen3", "dataset": "ds-1", "validationDataset": None, "precision": "fp32",
           "execution": {"gpus": 1, "pool": "default"},
           "adapter": {"rank": 8, "alpha": 16.0, "dropout": 0.0, "targetModules": "all-linear"}}
_GRPO = {"klPenalty": 0.0, "numGenerations": 4, "maxCompletionLength": 64, "temperature": 1.0}


def _plan(method: str, *, validation: bool, hyper: dict[str, Any], rewards: list[dict[str, Any]]) -> dict[str, Any]:
    plan: dict[str, Any] = {"method": method, **copy.deepcopy(_COMMON)}
    if validation:
        plan = {**{k: plan[k] for k in ("method", "model", "dataset", "validationDataset")},
                "validation": {"everySteps": None}, **plan}
    plan["hyperparameters"] = {**_HYPERPARAMETERS, **hyper}
    plan["grpo"] = {**_GRPO, "rewards": rewards} if method == "grpo" else None
    plan.update({"restore": None, "snapshots": {"everySteps": None}, "workload": "runs"})
    return plan


_FULL_REWARDS = [{"function": "length", "judge": None, "weight": 1.0, "field": None, "pattern": None, "target": 20},
                 {"function": None, "judge": "ep-1", "weight": 0.5, "field": None, "pattern": None, "target": None}]
_GIVEN_REWARDS = [{"function": "length", "judge": None, "weight": 1.0, "target": 20},
                  {"function": None, "judge": "ep-1", "weight": 0.5}]

# era -> (sft plan, grpo plan); the fields each era lacks read the schema's defaults
STORED_PLANS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "FIRST": tuple(_plan(m, validation=False, hyper={}, rewards=_FULL_REWARDS) for m in ("sft", "grpo")),
    "VALIDATION": tuple(_plan(m, validation=True, hyper={}, rewards=_FULL_REWARDS) for m in ("sft", "grpo")),
    "REWARD_PARAMETERS": tuple(_plan(m, validation=True, hyper={}, rewards=_GIVEN_REWARDS) for m in ("sft", "grpo")),
    "TRAIN_ON_PROMPT": tuple(_plan(m, validation=True, hyper={"trainOnPrompt": False}, rewards=_GIVEN_REWARDS)
                             for m in ("sft", "grpo")),
}


def typed(parts: dict[str, Any]) -> TrainingPlan:
    """A plan a test makes by hand: the parts it gives, a model and dataset when it names none, and
    every other field its schema default (as a stored plan lacking them reads it)."""
    return TrainingPlan.from_dict({"model": "builtin/tiny-qwen3", "dataset": "ds-test", **copy.deepcopy(parts)})


def amended(plan: TrainingPlan, changes: dict[str, Any]) -> TrainingPlan:
    """`plan` with `changes` merged in part by part (`{"adapter": {"alpha": 0.5}}` changes only alpha)."""

    def merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
        out = dict(base)
        for key, value in over.items():
            out[key] = merged(base[key], value) if isinstance(value, dict) and isinstance(base.get(key), dict) else value
        return out

    return TrainingPlan.from_dict(merged(plan.to_dict(), copy.deepcopy(changes)))
