"""SFT over the built-in image-text model (issue 17), for real on the CPU: rows with images go
through the model's processor, the loss is taken over the answers only, it falls on the bundled
sample, the snapshot's adapter branches like a text model's, and two CPU slots train as one."""

from __future__ import annotations

import json

import pytest
from peft import PeftModel

from services.trainer_worker.engines import train
from services.trainer_worker.engines.base import Restore
from services.trainer_worker.engines.image_rows import IMAGE_DATA, image_chat_row
from services.trainer_worker.engines.loss_masks import IGNORED
from services.trainer_worker.engines.sft import run_sft
from shared.models.loading import load_causal_lm, load_processor
from shared.models.tiny_models import ensure_builtin
from shared.models.tiny_vision_model import IMAGE_SOFT, SAMPLE_DATASET, VISION_MODELS
from shared.store.artifacts import ArtifactRoot
from tests.shared.plans.plan_fixtures import amended
from tests.trainer_worker.doubles import RecordingReporter, make_job

MODEL = "builtin/tiny-gemma3-vision"
STEPS = 12


@pytest.fixture(scope="module")
def vision_dir(tmp_path_factory):
    return ensure_builtin("tiny-gemma3-vision", ArtifactRoot(tmp_path_factory.mktemp("artifacts")))


def vision_job(model_dir, work_dir, **kwargs):
    job = make_job(model_dir, work_dir, dataset=SAMPLE_DATASET, **kwargs)
    job.plan = amended(job.plan, {"model": MODEL})
    return job


@pytest.fixture(scope="module")
def trained(vision_dir, tmp_path_factory):
    reporter = RecordingReporter()
    job = vision_job(vision_dir, tmp_path_factory.mktemp("work"), every_steps=None, maxSteps=STEPS)
    return job, reporter, run_sft(job, reporter)


def test_the_loss_is_taken_over_the_answer_only(vision_dir):
    processor = load_processor(vision_dir)
    row = json.loads(SAMPLE_DATASET.read_text().splitlines()[0])
    encoded = image_chat_row(processor, row["messages"], train_on_prompt=False, max_length=512, line=1)
    tokenizer = processor.tokenizer
    trained = [t for t, label in zip(encoded["input_ids"], encoded["labels"]) if label != IGNORED]
    assert tokenizer.decode(trained) == row["messages"][1]["content"] + "<end_of_turn>\n"
    soft = tokenizer.convert_tokens_to_ids(IMAGE_SOFT)
    assert encoded["input_ids"].count(soft) == VISION_MODELS["tiny-gemma3-vision"].image_tokens
    assert encoded["token_type_ids"] == [int(t == soft) for t in encoded["input_ids"]]
    assert len(encoded[IMAGE_DATA]) == 1 and encoded[IMAGE_DATA][0].startswith(b"\x89PNG")


def test_training_lowers_the_loss_on_the_sample(trained):
    _, reporter, result = trained
    losses = [p["loss"] for p in reporter.points]
    assert len(losses) == STEPS and result.final_step == STEPS
    first, last = sum(losses[:3]) / 3, sum(losses[-3:]) / 3
    assert last < first - 1.0, losses
    assert reporter.what_trains().startswith(f"training {MODEL} on 64 rows on cpu:0, ")
    assert reporter.what_trains().endswith("the loss over the assistant turns (192 of 1984 tokens, 64 images)")


def test_the_snapshot_adapter_loads_over_the_base_and_a_weights_branch_trains_on(trained, vision_dir, tmp_path):
    job, reporter, result = trained
    snapshot = reporter.snapshots[-1]
    assert snapshot["final"] and snapshot["manifest"]["model"] == MODEL and snapshot["manifest"]["step"] == STEPS
    model = PeftModel.from_pretrained(load_causal_lm(vision_dir, "fp32"), snapshot["directory"] / "adapter")
    assert any("lora_B" in name for name, _ in model.named_parameters())
    branch = RecordingReporter()
    run_sft(vision_job(vision_dir, tmp_path, every_steps=None, maxSteps=2,
                       restore=Restore("weights", snapshot["directory"])), branch)
    assert "over the adapter of step 12" in branch.what_trains()
    assert branch.points[0]["loss"] < reporter.points[0]["loss"] - 1.0  # it starts where the parent got to


def test_two_slots_train_image_text_rows_like_one(trained, vision_dir, tmp_path):
    """sft-ddp over the image-text model: two real ranks joined by gloo, each collating its own
    rows' images; the first step sees the same 8 rows as on one slot, so the same loss."""
    _, one, _ = trained
    two = RecordingReporter()
    job = vision_job(vision_dir, tmp_path, every_steps=None, maxSteps=2, devices=2)
    result = train(job, two)
    assert result.final_step == 2 and two.what_trains().startswith(f"training {MODEL} on 64 rows on cpu:0, cpu:1, ")
    assert abs(two.points[0]["loss"] - one.points[0]["loss"]) <= 1e-5 * abs(one.points[0]["loss"])
    assert two.points[1]["loss"] < two.points[0]["loss"]
    model = PeftModel.from_pretrained(load_causal_lm(vision_dir, "fp32"), two.snapshots[-1]["directory"] / "adapter")
    assert any("lora_B" in name for name, _ in model.named_parameters())
