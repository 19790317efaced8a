"""A run that names a validationDataset scores it every few steps and at the end (issue 7):
validation loss and perplexity land in the run's metrics beside the training loss."""

from __future__ import annotations

import dataclasses
import math

import pytest

from services.trainer_worker.engines.sft import run_sft, validate_every
from shared.models.tiny_models import SAMPLE_DATASET
from tests.shared.plans.plan_fixtures import amended, typed
from tests.trainer_worker.doubles import RecordingReporter, make_job


@pytest.fixture(scope="module")
def validated(model_dir, tmp_path_factory):
    work = tmp_path_factory.mktemp("work")
    lines = SAMPLE_DATASET.read_text().splitlines()
    train, held_out = work / "train.jsonl", work / "validation.jsonl"
    train.write_text("\n".join(lines[:224]) + "\n")
    held_out.write_text("\n".join(lines[224:]) + "\n")  # 32 rows the run never trains on
    job = make_job(model_dir, work, dataset=train, every_steps=None, maxSteps=12)
    job.plan = amended(job.plan, {"validationDataset": "ds-validation", "validation": {"everySteps": 5}})
    job = dataclasses.replace(job, validation_path=held_out)
    reporter = RecordingReporter()
    return reporter, run_sft(job, reporter)


def test_validation_points_come_every_n_steps_and_at_the_last_step(validated):
    reporter, result = validated
    points = [p for p in reporter.points if "validationLoss" in p]
    assert [p["step"] for p in points] == [5, 10, 12] and result.final_step == 12
    for point in points:
        assert set(point) == {"step", "validationLoss", "validationPerplexity"}
        assert point["validationPerplexity"] == pytest.approx(math.exp(point["validationLoss"]))
    training = [p for p in reporter.points if "loss" in p]
    assert [p["step"] for p in training] == list(range(1, 13))  # the training series is unchanged


def test_validation_loss_falls_as_the_run_learns_the_task(validated):
    reporter, _ = validated
    losses = [p["validationLoss"] for p in reporter.points if "validationLoss" in p]
    assert losses[-1] < losses[0] - 0.5, losses
    assert any("validating on 32 rows" in message for _, message in reporter.events)


def test_how_often_a_plan_validates():
    assert validate_every(typed({"snapshots": {"everySteps": 50}})) is None  # no validation dataset
    plan = {"validationDataset": "ds-1", "snapshots": {"everySteps": 50}, "validation": {"everySteps": None}}
    assert validate_every(typed(plan)) == 50  # the snapshot interval
    assert validate_every(typed({**plan, "validation": {"everySteps": 7}})) == 7
    assert validate_every(typed({"validationDataset": "ds-1", "snapshots": {"everySteps": None}})) > 10**9  # end only


def test_validating_does_not_change_what_the_run_trains(validated, model_dir, tmp_path):
    reporter, _ = validated
    lines = SAMPLE_DATASET.read_text().splitlines()
    train = tmp_path / "train.jsonl"
    train.write_text("\n".join(lines[:224]) + "\n")
    plain = RecordingReporter()
    run_sft(make_job(model_dir, tmp_path, dataset=train, every_steps=None, maxSteps=12), plain)
    assert [p["loss"] for p in plain.points] == [p["loss"] for p in reporter.points if "loss" in p]


def test_a_runs_validation_loss_is_an_evaluations_loss_over_the_same_rows(validated, model_dir):
    """Issue 30: a run's last validationLoss and an evaluation of its final snapshot over the same
    rows are one number: the mean NLL per assistant token over every row (token-weighted), not the
    Trainer's mean of per-micro-batch means (32 rows of uneven length, micro-batches of 8)."""
    import json

    from services.trainer_worker.engines.evaluate import score
    from shared.models.load_spec import LoadSpec, load_model, model_generation_config
    from shared.serving.generation import Generator

    reporter, _ = validated
    final = reporter.snapshot_at(12)
    rows = [json.loads(line) for line in SAMPLE_DATASET.read_text().splitlines()[224:]]
    spec = LoadSpec(model="builtin/tiny-qwen3", model_dir=str(model_dir), dtype="fp32",
                    generation_config=model_generation_config(model_dir, None), batch_invariant=True,
                    served_model_name="validation-test", adapters={"final": str(final / "adapter")}, device="cpu")
    model, tokenizer = load_model(spec)
    evaluation = score(Generator(model, tokenizer, spec), "final", rows, max_tokens=1).metrics
    validation = [p["validationLoss"] for p in reporter.points if "validationLoss" in p][-1]
    assert validation == pytest.approx(evaluation["loss"], rel=1e-5), (validation, evaluation["loss"])


COMPLETION_ROWS = [{"prompt": "Add: 2 + 3 =", "completion": " 5"},
                   {"prompt": "Reverse: stone ->", "completion": " enots"},
                   {"prompt": "Say", "completion": " a much longer completion than the others, on purpose"},
                   {"prompt": "Add: 10 + 31 =", "completion": " 41"},
                   {"prompt": "Reverse: ab ->", "completion": " ba"}]


@pytest.mark.parametrize("fmt", ["chat", "multi-turn", "completion", "packed"])
def test_a_validation_pass_weights_every_target_token_alike(model_dir, tmp_path, fmt):
    """The validation pass's loss (validation_loss.py) over micro-batches of uneven rows is the
    evaluation's token-weighted loss on the same model and rows, for chat, multi-turn chat (every
    assistant turn counted by both) and completion rows alike (a completion's EOS counted by both);
    the Trainer's own eval_loss, a mean of batch means, is not."""
    import json

    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from services.trainer_worker.engines.evaluate import score
    from services.trainer_worker.engines.packing import PackedCollator, use_packed_masks
    from services.trainer_worker.engines.sft import packed, tokenized
    from services.trainer_worker.engines.validation_loss import token_weighted_validation
    from shared.models.load_spec import LoadSpec, load_model, model_generation_config
    from shared.serving.generation import Generator

    spec = LoadSpec(model="builtin/tiny-qwen3", model_dir=str(model_dir), dtype="fp32",
                    generation_config=model_generation_config(model_dir, None), batch_invariant=True,
                    served_model_name="base", adapters={}, device="cpu")
    model, tokenizer = load_model(spec)
    chat = [json.loads(line) for line in SAMPLE_DATASET.read_text().splitlines()[:7]]
    multi_turn = [{"messages": [{"role": "system", "content": "Be brief."}, *a["messages"], *b["messages"]]}
                  for a, b in zip(chat, chat[1:])]
    rows = {"chat": chat, "multi-turn": multi_turn, "completion": COMPLETION_ROWS, "packed": chat}[fmt]
    prepared = Dataset.from_list(tokenized(rows, tokenizer, train_on_prompt=False))
    collator = None
    if fmt == "packed":  # rows share sequences of up to 96 tokens (packing.py), several per sequence
        prepared = Dataset.from_list(packed(tokenized(rows, tokenizer, train_on_prompt=False, every_format=True), 96))
        assert len(prepared) < len(rows)
        collator = PackedCollator(tokenizer.pad_token_id)
    args = SFTConfig(output_dir=str(tmp_path), per_device_eval_batch_size=2, report_to=[], use_cpu=True,
                     max_length=512, prediction_loss_only=True)

    def validation_loss(trainer_class) -> float:
        trainer = trainer_class(model=model, processing_class=tokenizer, args=args, train_dataset=prepared,
                                data_collator=collator)
        if collator is not None:
            use_packed_masks(trainer.model)
        return trainer.evaluate(prepared)["eval_loss"]

    weighted = validation_loss(token_weighted_validation(SFTTrainer))
    batch_means = validation_loss(SFTTrainer)
    evaluation = score(Generator(model, tokenizer, spec), "base", rows, max_tokens=1).metrics["loss"]
    assert weighted == pytest.approx(evaluation, rel=1e-5)
    assert abs(batch_means - evaluation) > 1e-4  # the number the issue saw differ


def test_two_ranks_validate_to_the_evaluations_number(model_dir, tmp_path):
    """sft-ddp on two CPU slots: each rank scores part of the validation rows; the gathered loss
    counts each row once (30 rows do not split into even micro-batches, so the sampler repeats
    rows to even out the ranks) and is the evaluation's loss of the final snapshot."""
    import json

    from services.trainer_worker.engines import train
    from services.trainer_worker.engines.evaluate import score
    from shared.models.load_spec import LoadSpec, load_model, model_generation_config
    from shared.serving.generation import Generator

    lines = SAMPLE_DATASET.read_text().splitlines()
    train_rows, held_out = tmp_path / "train.jsonl", tmp_path / "validation.jsonl"
    train_rows.write_text("\n".join(lines[:64]) + "\n")
    held_out.write_text("\n".join(lines[226:]) + "\n")
    job = make_job(model_dir, tmp_path / "work", dataset=train_rows, every_steps=None, maxSteps=3, devices=2)
    job.plan = amended(job.plan, {"validationDataset": "ds-validation"})
    job = dataclasses.replace(job, validation_path=held_out)
    reporter = RecordingReporter()
    result = train(job, reporter)
    assert result.final_step == 3
    validation = [p["validationLoss"] for p in reporter.points if "validationLoss" in p]
    assert len(validation) == 1
    rows = [json.loads(line) for line in lines[226:]]
    assert len(rows) == 30
    spec = LoadSpec(model="builtin/tiny-qwen3", model_dir=str(model_dir), dtype="fp32",
                    generation_config=model_generation_config(model_dir, None), batch_invariant=True,
                    served_model_name="ddp-test", adapters={"final": str(reporter.snapshot_at(3) / "adapter")},
                    device="cpu")
    model, tokenizer = load_model(spec)
    evaluation = score(Generator(model, tokenizer, spec), "final", rows, max_tokens=1).metrics
    assert validation[0] == pytest.approx(evaluation["loss"], rel=1e-5), (validation[0], evaluation["loss"])
