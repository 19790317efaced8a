"""The SFT engine: TRL's SFTTrainer over a PEFT LoRA adapter. "sft-single" runs it on one device;
"sft-ddp" runs it in every rank of a multi-device run (engines.distributed), and "sft-fsdp" the
same with the model sharded across the ranks (engines/sharding.py); there the stop
decision is rank 0's, broadcast to all ranks, and only rank 0 publishes snapshots.

The Hugging Face Trainer does the training; the parts every engine shares are in kit.py (loading,
restores, trainer arguments, the reporter callback, finishing). The callback sends metrics,
honours cancel and pause requests and turns every HF checkpoint into a layout-2 snapshot
(base.publish_checkpoint_as_snapshot). Checkpoints are saved every `snapshots.everySteps` steps,
always at the last step (not when the user cancelled), and at the step where the user paused.

A job may restore (job.restore): its snapshot's adapter weights with a fresh optimizer, or its
whole training state through the Trainer's `resume_from_checkpoint`, which continues exactly
(optimizer, LR schedule, RNG, data position, step).

What is SFT's own: its view of the dataset rows (`load_rows`), which tokens the loss is taken over
(`tokenized`, loss_masks.py: assistant turns, or completions, unless `trainOnPrompt`), its TRL
config (`sft_config`) and validation passes over the plan's `validationDataset`
(`SftReporterCallback`), whose rows are masked the same way and whose loss is token-weighted
(validation_loss.py: an evaluation's loss over the same rows).

On CUDA the worker exposes the granted GPUs to this process (CUDA_VISIBLE_DEVICES), so the
engine sees them as cuda:0..N-1 (cuda:LOCAL_RANK in a rank).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from services.trainer_worker.engines.base import Reporter, TrainingJob, TrainingResult
from services.trainer_worker.engines.image_rows import IMAGE_DATA, ImageTextCollator, has_images, image_rows
from services.trainer_worker.engines.kit import (
    NEVER,
    ReporterCallback,
    activation_checkpointing,
    bind_callback,
    finish_training,
    guard_checkpoint_writes,
    load_for_training,
    lora_config,
    quiet_progress,
    report_memory_estimate,
    restore_phrase,
    trainer_arguments,
    without_printer,
)
from services.trainer_worker.engines.loss_masks import IGNORED, chat_row, completion_row, trained_tokens
from services.trainer_worker.engines.lr_schedule import warm_up_from_the_first_step
from services.trainer_worker.engines.packing import PackedCollator, labelled, pack, use_packed_masks
from services.trainer_worker.engines.sharding import sharded_trainer, shards
from services.trainer_worker.engines.validation_loss import token_weighted_validation
from shared import reasons
from shared.data.datasets import CHAT, COMPLETION, read_rows
from shared.errors import WorkFailed
from shared.models.loading import load_processor
from shared.plans import TrainingPlan


def load_rows(dataset_path: Path) -> list[dict[str, Any]]:
    """SFT's view of a dataset (shared/data/datasets.py reads it): chat rows as their `messages`, or
    completion rows as their `prompt` + `completion`; one format for the whole file."""
    rows = []
    for row in read_rows(dataset_path):
        if row.format == CHAT:
            rows.append({"messages": row.fields["messages"]})
        elif row.format == COMPLETION:
            rows.append({"prompt": row.fields["prompt"], "completion": row.fields["completion"]})
        else:
            raise WorkFailed(reasons.dataset_line_not_sft(row.line))
    if not rows:
        raise WorkFailed(reasons.DATASET_EMPTY)
    if len({tuple(sorted(r)) for r in rows}) > 1:
        raise WorkFailed(reasons.DATASET_FORMATS_MIXED)
    return rows


def validation_point(step: int, loss: float) -> dict[str, Any]:
    """The metrics point of one validation pass: the mean loss per target token over every
    validation row (the tokens training takes its loss over: the completion / assistant tokens;
    validation_loss.py) and its perplexity."""
    return {"step": step, "validationLoss": loss, "validationPerplexity": math.exp(min(loss, 50.0))}


def validate_every(plan: TrainingPlan) -> int | None:
    """Steps between validation passes: the plan's validation.everySteps, else its snapshot interval,
    else only the last step (None when the plan has no validationDataset)."""
    if not plan.validation_dataset:
        return None
    return plan.validation.every_steps or plan.snapshots.every_steps or NEVER


class SftReporterCallback(ReporterCallback):
    """kit.ReporterCallback with validation passes: the Trainer scores the eval dataset every
    `validate_every` steps and at the last, and each pass is one metrics point."""

    def __init__(self, job: TrainingJob, reporter: Reporter, *, validate_every: int | None = None):
        super().__init__(job, reporter)
        self.validate_every = validate_every  # steps between validation passes (None: no validation set)

    def on_step_end(self, args, state, control, **kwargs):
        if self.validate_every and (state.global_step % self.validate_every == 0
                                    or state.global_step >= state.max_steps):
            control.should_evaluate = True  # the Trainer scores the eval dataset right after this step
        super().on_step_end(args, state, control, **kwargs)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "eval_loss" in logs:
            self.reporter.metrics(validation_point(state.global_step, float(logs["eval_loss"])))
            return
        super().on_log(args, state, control, logs=logs, **kwargs)


def sft_config(job: TrainingJob, *, checkpointing: bool | None = None):
    """The TRL SFTConfig this job trains with, derived from the plan (and activation checkpointing as
    kit.activation_checkpointing chose it for the loaded model)."""
    from trl import SFTConfig

    common = trainer_arguments(job, checkpointing=checkpointing)
    return SFTConfig(
        **common,
        # Validation passes (validationDataset): the same micro-batch, loss only (no logits kept).
        per_device_eval_batch_size=common["per_device_train_batch_size"],
        prediction_loss_only=True,
        max_length=int(job.plan.hyperparameters.max_seq_length),
        include_num_input_tokens_seen="non_padding",
        packing=False,
        # prompt/completion rows: the loss over the completion only, unless the plan trains on the prompt
        # (chat rows come tokenized with their own mask: loss_masks.py)
        completion_only_loss=not job.plan.hyperparameters.train_on_prompt,
    )


def tokenized(rows: list[dict[str, Any]], tokenizer, *, train_on_prompt: bool,
              every_format: bool = False) -> list[dict[str, Any]]:
    """Chat rows as `input_ids` + `assistant_masks` (loss_masks.chat_row: the assistant turns, for
    any chat template); prompt/completion rows as they are, for TRL to mask, unless `every_format`
    (packing needs every row tokenized: loss_masks.completion_row)."""
    if not rows:
        return rows
    if "messages" in rows[0]:
        return [chat_row(tokenizer, row["messages"], train_on_prompt=train_on_prompt) for row in rows]
    if every_format:
        return [completion_row(tokenizer, row["prompt"], row["completion"], train_on_prompt=train_on_prompt)
                for row in rows]
    return rows


def with_images(processor, path: Path, rows: list[dict[str, Any]], train_on_prompt: bool,
                max_length: int) -> list[dict[str, Any]]:
    """Rows with images tokenized by the model's processor, labelled (image_rows.py)."""
    lines = [row.line for row in read_rows(path)]
    return image_rows(processor, rows, train_on_prompt=train_on_prompt, max_length=max_length, lines=lines)


def packed(rows: list[dict[str, Any]], max_length: int) -> list[dict[str, Any]]:
    return pack([labelled(row) for row in rows], max_length)


def loss_phrase(rows: list[dict[str, Any]], *, train_on_prompt: bool) -> str:
    """What the loss is taken over, for the run's first event."""
    if train_on_prompt:
        return reasons.LOSS_EVERY_TOKEN
    if rows and "assistant_masks" in rows[0]:
        total = sum(len(row["input_ids"]) for row in rows)
        return reasons.loss_assistant_turns(sum(map(trained_tokens, rows)), total)
    if rows and IMAGE_DATA in rows[0]:
        total = sum(len(row["input_ids"]) for row in rows)
        trained = sum(label != IGNORED for row in rows for label in row["labels"])
        return reasons.loss_assistant_turns(trained, total, images=sum(len(row[IMAGE_DATA]) for row in rows))
    return reasons.LOSS_COMPLETIONS


def first_trained_token(row: dict[str, Any], tokenizer) -> int | None:
    """Where a row's first token the loss is taken over sits (None: it has none). A prompt/completion
    row is tokenized as TRL tokenizes it (loss_masks.completion_row)."""
    if "assistant_masks" not in row:
        row = completion_row(tokenizer, row["prompt"], row["completion"])
    mask = row["assistant_masks"]
    return mask.index(1) if 1 in mask else None


def rows_within_length(rows: list[dict[str, Any]], tokenizer, max_length: int, reporter: Reporter) -> None:
    """TRL cuts each row to maxSeqLength and drops a row left with no token the loss is taken over
    (issue 30): say so before the first step, a warn event for some rows, a failure naming the length
    that would keep one when none is left (rather than torch's empty-sampler error)."""
    firsts = [first_trained_token(row, tokenizer) for row in rows]
    dropped = sum(1 for first in firsts if first is None or first >= max_length)
    if dropped == len(rows) and rows:
        needed = min((first for first in firsts if first is not None), default=max_length) + 1
        raise WorkFailed(reasons.rows_without_trained_tokens(rows=len(rows), max_seq_length=max_length,
                                                             needed=needed))
    if dropped:
        reporter.event(reasons.rows_left_out_for_length(dropped=dropped, rows=len(rows), max_seq_length=max_length),
                       level="warn")


def run_sft(job: TrainingJob, reporter: Reporter) -> TrainingResult:
    """Train a LoRA adapter by supervised fine-tuning; snapshots land under job.snapshots_dir."""
    from datasets import Dataset
    from trl import SFTTrainer

    quiet_progress()
    plan = job.plan
    restored, tokenizer, model = load_for_training(job, reporter)
    # FSDP2 (sft-fsdp) checkpoints by its own config (engines/sharding.py): its runs are the ones
    # whose whole copies did not fit
    checkpointing, why = (None, None) if shards(job.engine) else activation_checkpointing(job, model)
    report_memory_estimate(job, reporter, model, checkpointing=checkpointing)
    args = sft_config(job, checkpointing=checkpointing)
    train_on_prompt = bool(plan.hyperparameters.train_on_prompt)
    # packing takes no rows with images: the API refused such a plan (shared/plans/check.py)
    packing = bool(plan.hyperparameters.packing)
    raw_rows = load_rows(job.dataset_path)
    collator = PackedCollator(tokenizer.pad_token_id) if packing else None
    if has_images(raw_rows):  # an image-text dataset (the resolver matched it to an image-text model)
        processor = load_processor(job.model_dir)
        rows = with_images(processor, job.dataset_path, raw_rows, train_on_prompt, args.max_length)
        validation_rows = (with_images(processor, job.validation_path, load_rows(job.validation_path),
                                       train_on_prompt, args.max_length) if job.validation_path else None)
        collator = ImageTextCollator(processor)
        args.remove_unused_columns = False  # the collator reads the images' column
    else:
        rows = tokenized(raw_rows, tokenizer, train_on_prompt=train_on_prompt, every_format=packing)
        validation_rows = (tokenized(load_rows(job.validation_path), tokenizer, train_on_prompt=train_on_prompt,
                                     every_format=packing) if job.validation_path else None)
    if not packing and not train_on_prompt and not has_images(raw_rows):
        rows_within_length(rows, tokenizer, args.max_length, reporter)
    if packing:
        dataset = Dataset.from_list(packed(rows, args.max_length))
        validation = Dataset.from_list(packed(validation_rows, args.max_length)) if validation_rows else None
    else:
        dataset = Dataset.from_list(rows)
        validation = Dataset.from_list(validation_rows) if validation_rows else None
    job.snapshots_dir.mkdir(parents=True, exist_ok=True)
    callback = bind_callback(SftReporterCallback, job, reporter,
                             validate_every=validate_every(plan) if job.validation_path else None)
    trainer_class = token_weighted_validation(sharded_trainer(SFTTrainer) if shards(job.engine) else SFTTrainer)
    trainer = warm_up_from_the_first_step(guard_checkpoint_writes(without_printer(trainer_class(
        model=model,
        args=args,
        train_dataset=dataset,
        eval_dataset=validation,
        processing_class=tokenizer,
        data_collator=collator,
        peft_config=lora_config(plan) if restored is None else None,
        callbacks=[callback],
    )), job), restored)
    if packing:
        use_packed_masks(trainer.model)
    reporter.event(reasons.sft_started(
        model=plan.model, rows=len(rows), devices=job.devices, packed=len(dataset) if packing else None,
        max_length=args.max_length, validation_rows=len(validation_rows or []),
        per_device=args.per_device_train_batch_size, loss=loss_phrase(rows, train_on_prompt=train_on_prompt),
        restore=restore_phrase(restored)))
    if why:
        reporter.event(why)
    trainer.train(resume_from_checkpoint=restored.resume_from if restored else None)
    return finish_training(job, restored, trainer, callback)
