"""What the engines share (engines/kit.py): the defaults an engine falls back to for a plan that
lacks a field (the plan schema's own) and the LoRA config."""

from __future__ import annotations

import copy
import json

import pytest

from services.trainer_worker.engines.base import TrainingJob
from services.trainer_worker.engines.grpo import grpo_config
from services.trainer_worker.engines.kit import lora_config, setting, trainer_arguments
from services.trainer_worker.engines.sft import run_sft, sft_config
from shared.plans import parse_plan, plan_default
from tests.trainer_worker.doubles import RecordingReporter, make_job

MODEL = "builtin/tiny-qwen3"
EXACT = [{"function": "exact_match"}]


def _job(plan: dict, work_dir, devices: int = 1) -> TrainingJob:
    return TrainingJob("run-defaults", plan, "sft-single" if devices == 1 else "sft-ddp", work_dir, work_dir,
                       work_dir, [f"cpu:{i}" for i in range(devices)])


# Plans as old as can be: only what a plan never lacks. Every other field falls back to a default.
SPARSE = {
    "sft": {"method": "sft", "model": MODEL},
    "grpo": {"method": "grpo", "model": MODEL, "grpo": {"rewards": EXACT}},
}


@pytest.mark.parametrize("method", ["sft", "grpo"])
def test_every_default_an_engine_falls_back_to_is_the_plan_schemas(method, tmp_path):
    """An engine given a plan that lacks every optional field trains exactly as it would on the plan
    `parse_plan` stores for the same request, where the schema filled every default in."""
    sparse = copy.deepcopy(SPARSE[method])
    stored = parse_plan({**sparse, "dataset": "ds-any"})
    config = sft_config if method == "sft" else grpo_config
    for devices in (1, 2):  # the batch per device divides the default global batch
        assert trainer_arguments(_job(sparse, tmp_path, devices)) == trainer_arguments(_job(stored, tmp_path, devices))
    # (a TRL config for several devices would start a process group: one device suffices for the rest)
    assert config(_job(sparse, tmp_path)).to_dict() == config(_job(stored, tmp_path)).to_dict()
    assert lora_config(sparse).to_dict() == lora_config(stored).to_dict()
    # the two defaults the engines used to carry of their own, and disagreed on
    args = config(_job(sparse, tmp_path))
    assert args.learning_rate == plan_default("hyperparameters", "learningRate")
    if method == "sft":
        assert args.max_length == plan_default("hyperparameters", "maxSeqLength")


def test_a_setting_falls_back_only_where_the_plan_has_none():
    plan = {"hyperparameters": {"warmupSteps": 0, "seed": None}, "grpo": None}
    assert setting(plan, "hyperparameters", "warmupSteps") == 0
    assert setting(plan, "hyperparameters", "seed") == plan_default("hyperparameters", "seed")
    assert setting(plan, "grpo", "numGenerations") == plan_default("grpo", "numGenerations")
    assert setting({}, "precision") == plan_default("precision")


def test_an_alpha_of_one_half_reaches_the_adapter_as_one_half(model_dir, tmp_path):
    assert lora_config({"adapter": {"rank": 8, "alpha": 0.5}}).lora_alpha == 0.5
    job = make_job(model_dir, tmp_path, maxSteps=1, every_steps=None)
    job.plan["adapter"]["alpha"] = 0.5
    run_sft(job, RecordingReporter())
    saved = json.loads((job.snapshot_dir(1) / "adapter" / "adapter_config.json").read_text())
    assert saved["lora_alpha"] == 0.5 and saved["r"] == 8
