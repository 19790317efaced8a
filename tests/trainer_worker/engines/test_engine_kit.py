"""What the engines share (engines/kit.py, engines/__init__.py): which function trains each declared
engine, the defaults an engine falls back to for a plan that lacks a field (the plan schema's own),
the LoRA config, and each engine's view of dataset rows (shared/data/datasets.py reads them)."""

from __future__ import annotations

import json

import pytest

from services.trainer_worker.engines import RUNNERS, engine_function
from services.trainer_worker.engines.base import TrainingJob
from services.trainer_worker.engines.evaluate import prepare
from services.trainer_worker.engines.grpo import grpo_config, load_prompt_rows, run_grpo
from services.trainer_worker.engines.kit import lora_config, trainer_arguments
from services.trainer_worker.engines.sft import load_rows, run_sft, sft_config
from services.trainer_worker.evaluation_job import _read_rows
from shared.data.datasets import row_prompt, row_reference
from shared.errors import WorkFailed
from shared.planning.engines import ENGINES, methods
from shared.plans import TrainingPlan, parse_plan, plan_default
from tests.shared.plans.plan_fixtures import amended, typed
from tests.trainer_worker.doubles import RecordingReporter, make_job

MODEL = "builtin/tiny-qwen3"
EXACT = [{"function": "exact_match"}]


def test_every_declared_engine_has_its_function_and_nothing_else_does():
    runs = {"sft": run_sft, "grpo": run_grpo}
    for spec in ENGINES:
        assert engine_function(spec.name) is runs[spec.method]
    assert set(RUNNERS) == set(methods())
    with pytest.raises(WorkFailed, match="this worker has no engine sft-triple"):
        engine_function("sft-triple")


def _job(plan: TrainingPlan, work_dir, devices: int = 1) -> TrainingJob:
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
    sparse = typed(SPARSE[method])
    parsed = parse_plan({**SPARSE[method], "dataset": "ds-any"})
    stored = typed({k: v for k, v in parsed.items() if k not in ("name", "tags")})  # the run's own, not its plan's
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
    """What the engines read of a plan (its TrainingPlan) falls back to the schema's default where the
    stored plan has no value, and only there."""
    plan = typed({"hyperparameters": {"warmupSteps": 0, "seed": None}, "grpo": None})
    assert plan.hyperparameters.warmup_steps == 0
    assert plan.hyperparameters.seed == plan_default("hyperparameters", "seed")
    assert plan.grpo_settings.num_generations == plan_default("grpo", "numGenerations")
    assert typed({}).precision == plan_default("precision")


def test_an_alpha_of_one_half_reaches_the_adapter_as_one_half(model_dir, tmp_path):
    assert lora_config(typed({"adapter": {"rank": 8, "alpha": 0.5}})).lora_alpha == 0.5
    job = make_job(model_dir, tmp_path, maxSteps=1, every_steps=None)
    job.plan = amended(job.plan, {"adapter": {"alpha": 0.5}})
    run_sft(job, RecordingReporter())
    saved = json.loads((job.snapshot_dir(1) / "adapter" / "adapter_config.json").read_text())
    assert saved["lora_alpha"] == 0.5 and saved["r"] == 8


ROWS = [
    {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "q1"},
                  {"role": "assistant", "content": "a1"}], "level": 1},
    {"prompt": "q2", "completion": "a2", "level": 2},
    {"prompt": [{"role": "user", "content": "q3"}], "answer": "a3", "level": 3},
]


def _write(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    return path


@pytest.mark.parametrize("row", ROWS, ids=["chat", "completion", "prompt"])
def test_every_engine_reads_a_rows_prompt_and_reference_alike(row, tmp_path):
    path = _write(tmp_path / "rows.jsonl", [row])
    prompt, reference = row_prompt(row), row_reference(row)
    grpo = load_prompt_rows(path)[0]
    assert (grpo["prompt"], grpo["answer"], grpo["level"]) == (prompt, reference, row["level"])
    evaluated = prepare(_read_rows(path))[0]
    assert (evaluated.prompt, evaluated.reference, evaluated.row) == (prompt, reference, row)
    if "answer" not in row:  # SFT trains on the row's messages, or its prompt and completion, as written
        assert load_rows(path) == [{k: row[k] for k in ("messages", "prompt", "completion") if k in row}]


def test_grpo_keeps_every_column_a_reward_reads(tmp_path):
    rows = load_prompt_rows(_write(tmp_path / "rows.jsonl", [
        {"prompt": "p1", "answer": "a1", "level": 1}, {"prompt": "p2", "completion": "c2", "answer": "given"}]))
    assert rows == [{"prompt": "p1", "answer": "a1", "level": 1},
                    {"prompt": "p2", "answer": "given", "level": None}]  # a row's own answer wins
