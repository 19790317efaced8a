"""The single-device SFT engine ("sft-single"): TRL's SFTTrainer over a PEFT LoRA adapter.

The Hugging Face Trainer does the training; one callback connects it to the trainer platform:
`ReporterCallback` sends metrics, honours cancel and pause requests and turns every HF checkpoint
into a layout-2 snapshot (base.publish_checkpoint_as_snapshot). Checkpoints are saved every
`snapshots.everySteps` steps, always at the last step (not when the user cancelled), and at the
step where the user paused.

A job may restore (job.restore): its snapshot's adapter weights with a fresh optimizer, or its
whole training state through the Trainer's `resume_from_checkpoint`, which continues exactly
(optimizer, LR schedule, RNG, data position, step). The same function runs inside every rank of a
multi-device run (engines.distributed): there the stop decision is rank 0's, broadcast to all
ranks, and only rank 0 publishes snapshots.

On CUDA the worker exposes the granted GPUs to this process (CUDA_VISIBLE_DEVICES), so the
engine sees them as cuda:0..N-1 (cuda:LOCAL_RANK in a rank).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.trainer_worker.engines.base import (
    RESTORE_TRAINING_STATE,
    STOP_CANCEL,
    STOP_PAUSE,
    Reporter,
    TrainingJob,
    TrainingResult,
    adapter_dir_of,
    check_restore,
    checkpoint_from_snapshot,
    per_device_batch_size,
    publish_checkpoint_as_snapshot,
)
from shared import reasons
from shared.errors import ValidationFailed
from shared.models import load_causal_lm, load_tokenizer

# A save_steps no run reaches: with save_strategy "steps" the Trainer still saves at the last step.
NEVER = 10**12


def load_rows(dataset_path: Path) -> list[dict[str, Any]]:
    """Read a JSONL dataset of chat `messages` rows or `prompt` + `completion` rows."""
    rows = []
    with open(dataset_path) as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            if "messages" in row:
                rows.append({"messages": row["messages"]})
            elif "prompt" in row and "completion" in row:
                rows.append({"prompt": row["prompt"], "completion": row["completion"]})
            else:
                raise ValidationFailed(
                    f"dataset line {number} has neither messages nor prompt and completion",
                    details={"line": number},
                )
    if not rows:
        raise ValidationFailed("the dataset has no rows")
    if len({tuple(sorted(r)) for r in rows}) > 1:
        raise ValidationFailed("the dataset mixes messages rows with prompt and completion rows")
    return rows


# A stop request as one integer, so that rank 0 can broadcast it to the other ranks.
_STOP_CODES = (None, STOP_CANCEL, STOP_PAUSE)


def _distributed() -> bool:
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def _agree_on_stop(request: str | None) -> str | None:
    """Every rank must stop at the same step, or the others hang in the next collective:
    rank 0's answer is broadcast to all (on one GPU, the answer is the reporter's)."""
    if not _distributed():
        return request
    import torch
    import torch.distributed as dist

    device = f"cuda:{torch.cuda.current_device()}" if dist.get_backend() == "nccl" else "cpu"
    code = torch.tensor([_STOP_CODES.index(request)], dtype=torch.int64, device=device)
    dist.broadcast(code, src=0)
    return _STOP_CODES[int(code.item())]


def _barrier() -> None:
    if _distributed():
        import torch.distributed as dist

        dist.barrier()


class ReporterCallback:
    """Connects the HF Trainer's events to a Reporter. Built lazily on a TrainerCallback (see _callback)."""

    def __init__(self, job: TrainingJob, reporter: Reporter, *, validate_every: int | None = None):
        self.job = job
        self.reporter = reporter
        self.validate_every = validate_every  # steps between validation passes (None: no validation set)
        self.losses: list[float] = []
        self.stopped_early = False
        self.paused = False
        self._last_time = 0.0
        self._last_tokens = 0

    def on_train_begin(self, args, state, control, **kwargs):
        self._last_time = time.monotonic()
        self._last_tokens = state.num_input_tokens_seen
        self.reporter.started(total_steps=state.max_steps)

    def on_step_end(self, args, state, control, **kwargs):
        if self.validate_every and (state.global_step % self.validate_every == 0
                                    or state.global_step >= state.max_steps):
            control.should_evaluate = True  # the Trainer scores the eval dataset right after this step
        if state.global_step >= state.max_steps:
            return
        request = _agree_on_stop(self.reporter.stop_request() if state.is_world_process_zero else None)
        if request is None:
            return
        self.stopped_early = True
        control.should_training_stop = True
        if request == STOP_PAUSE:
            # The Trainer saves right after this callback (optimizer, scheduler, RNG of every rank,
            # data position): on_save publishes it as the snapshot the run resumes from.
            self.paused = True
            control.should_save = True
            self.reporter.event(f"pausing at step {state.global_step}: writing a snapshot with training state")
        else:
            self.reporter.event(f"stopping at step {state.global_step}: the run was cancelled")

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "eval_loss" in logs:
            self.reporter.metrics(validation_point(state.global_step, float(logs["eval_loss"])))
            return
        if not logs or "loss" not in logs:  # the end-of-training summary has train_loss instead
            return
        now = time.monotonic()
        tokens = state.num_input_tokens_seen
        elapsed_s = max(now - self._last_time, 1e-9)
        point = {
            "step": state.global_step,
            "loss": float(logs["loss"]),
            "learningRate": float(logs.get("learning_rate", 0.0)),
            "gradNorm": float(logs["grad_norm"]) if logs.get("grad_norm") is not None else None,
            "tokensPerSecond": (tokens - self._last_tokens) / elapsed_s,
            "epoch": float(logs.get("epoch") or state.epoch or 0.0),
        }
        self._last_time, self._last_tokens = now, tokens
        self.losses.append(point["loss"])
        self.reporter.metrics(point)

    def on_save(self, args, state, control, **kwargs):
        # The Trainer saves every save_steps, at max_steps and when on_step_end asked for a pause,
        # not when a callback cancelled: a cancelled run keeps its periodic snapshots and writes no
        # final one. Every rank writes its own rng_state_R.pth into the checkpoint with no barrier
        # after it, so all ranks meet here before rank 0 moves the checkpoint into a snapshot.
        _barrier()
        if not state.is_world_process_zero:
            return
        step = state.global_step
        final = step >= state.max_steps
        checkpoint = Path(args.output_dir) / f"checkpoint-{step}"
        directory, manifest = publish_checkpoint_as_snapshot(self.job, checkpoint=checkpoint, step=step)
        self.reporter.snapshot(step=step, directory=directory, manifest=manifest, final=final)


def validation_point(step: int, loss: float) -> dict[str, Any]:
    """The metrics point of one validation pass: the mean token loss over the validation rows
    (the same loss as training: the completion / assistant tokens) and its perplexity."""
    return {"step": step, "validationLoss": loss, "validationPerplexity": math.exp(min(loss, 50.0))}


def validate_every(plan: dict) -> int | None:
    """Steps between validation passes: the plan's validation.everySteps, else its snapshot interval,
    else only the last step (None when the plan has no validationDataset)."""
    if not plan.get("validationDataset"):
        return None
    every = (plan.get("validation") or {}).get("everySteps") or (plan.get("snapshots") or {}).get("everySteps")
    return int(every or NEVER)


def _callback(job: TrainingJob, reporter: Reporter):
    from transformers import TrainerCallback

    class _Bound(ReporterCallback, TrainerCallback):
        pass

    return _Bound(job, reporter, validate_every=validate_every(job.plan) if job.validation_path else None)


def _save_steps(plan: dict) -> int:
    return int((plan.get("snapshots") or {}).get("everySteps") or NEVER)


def _lora_config(plan: dict):
    from peft import LoraConfig

    adapter = plan.get("adapter") or {}
    return LoraConfig(
        r=int(adapter.get("rank", 8)),
        lora_alpha=int(adapter.get("alpha", 16)),
        lora_dropout=float(adapter.get("dropout", 0.0)),
        target_modules=adapter.get("targetModules") or "all-linear",
        task_type="CAUSAL_LM",
    )


def adapter_differences(plan: dict, inherited: dict) -> list[str]:
    """How the plan's adapter settings differ from an inherited adapter_config.json, one phrase each.

    targetModules "all-linear" (or unset) is compared by nothing: PEFT stores the module names it
    expanded to, which the plan cannot name in advance.
    """
    adapter = plan.get("adapter") or {}
    differences = []
    for field, key, cast in (("rank", "r", int), ("alpha", "lora_alpha", float), ("dropout", "lora_dropout", float)):
        if adapter.get(field) is not None and cast(adapter[field]) != cast(inherited.get(key)):
            differences.append(f"{field} {adapter[field]} planned, {inherited.get(key)} inherited")
    wanted = adapter.get("targetModules")
    if wanted and wanted != "all-linear":
        wanted_set = {wanted} if isinstance(wanted, str) else set(wanted)
        have = inherited.get("target_modules")
        have_set = {have} if isinstance(have, str) else set(have or ())
        if wanted_set != have_set:
            differences.append(
                f"targetModules {', '.join(sorted(wanted_set))} planned, {', '.join(sorted(have_set))} inherited"
            )
    return differences


@dataclass
class RestorePlan:
    """What a job restores, worked out before any model is loaded."""

    adapter_dir: Path  # from which the PEFT model is built (its own adapter_config.json)
    checkpoint: Path | None  # for resume_from_checkpoint; None for a weights restore
    manifest: dict


def plan_restore(job: TrainingJob) -> RestorePlan | None:
    """Check the job's restore against its snapshot and say what to load; raises ValueError if it cannot."""
    manifest = check_restore(job)
    if manifest is None:
        return None
    checkpoint = None
    if job.restore.what == RESTORE_TRAINING_STATE:
        # One copy per rank: the ranks of a multi-device run rebuild it side by side.
        scratch = job.work_dir / "restore" / f"rank-{os.environ.get('RANK', '0')}"
        checkpoint = checkpoint_from_snapshot(job.restore.snapshot_dir, scratch / f"checkpoint-{manifest['step']}")
    return RestorePlan(adapter_dir=adapter_dir_of(job.restore.snapshot_dir, manifest), checkpoint=checkpoint,
                       manifest=manifest)


def _inherited_model(model, restored: RestorePlan, plan: dict, reporter: Reporter):
    """The base model with the snapshot's adapter, trainable, under the adapter's own LoRA config."""
    from peft import PeftModel

    inherited = json.loads((restored.adapter_dir / "adapter_config.json").read_text())
    differences = adapter_differences(plan, inherited)
    if differences:
        reporter.event(reasons.inherited_adapter_config_used("; ".join(differences)), level="warn")
    return PeftModel.from_pretrained(model, str(restored.adapter_dir), is_trainable=True)


def trainer_arguments(job: TrainingJob) -> dict[str, Any]:
    """The HF TrainingArguments every engine derives from the plan alone (SFT and GRPO alike):
    the global batch split over devices, the schedule, precision, snapshot interval, DDP backend."""
    plan = job.plan
    hp = plan.get("hyperparameters") or {}
    precision = plan.get("precision", "fp32")
    on_cpu = job.devices[0].startswith("cpu")
    accumulation = int(hp.get("gradientAccumulation") or 1)
    return dict(
        output_dir=str(job.work_dir / "hf"),
        per_device_train_batch_size=per_device_batch_size(
            global_batch=int(hp.get("batchSize") or 8), devices=len(job.devices), gradient_accumulation=accumulation
        ),
        gradient_accumulation_steps=accumulation,
        learning_rate=float(hp.get("learningRate") or 2e-4),
        max_steps=int(hp.get("maxSteps") or -1),
        num_train_epochs=float(hp.get("epochs") or 1),
        warmup_steps=int(hp.get("warmupSteps") or 0),
        seed=int(hp.get("seed") if hp.get("seed") is not None else 42),
        bf16=precision == "bf16",
        fp16=precision == "fp16",
        use_cpu=on_cpu,
        activation_checkpointing=not on_cpu,  # a CPU run's models are small; recomputation only slows it
        logging_steps=1,
        save_strategy="steps",
        save_steps=_save_steps(plan),
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
        # Several devices (engines.distributed starts one process each): gloo between CPU slots,
        # NCCL between GPUs. Every LoRA parameter takes part in each step.
        ddp_backend=("gloo" if on_cpu else "nccl") if len(job.devices) > 1 else None,
        ddp_find_unused_parameters=False if len(job.devices) > 1 else None,
    )


def sft_config(job: TrainingJob):
    """The TRL SFTConfig this job trains with, derived from the plan alone."""
    from trl import SFTConfig

    common = trainer_arguments(job)
    hp = job.plan.get("hyperparameters") or {}
    return SFTConfig(
        **common,
        # Validation passes (validationDataset): the same micro-batch, loss only (no logits kept).
        per_device_eval_batch_size=common["per_device_train_batch_size"],
        prediction_loss_only=True,
        max_length=int(hp.get("maxSeqLength") or 1024),
        include_num_input_tokens_seen="non_padding",
        packing=False,
    )


def _device(job: TrainingJob) -> str:
    if job.devices[0].startswith("cpu"):
        return "cpu"
    return f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"


def load_for_training(job: TrainingJob, reporter: Reporter):
    """(restored, tokenizer, model): what the job restores, checked, and the base model in the plan's
    precision on this process's device, with the inherited adapter when it restores one."""
    plan = job.plan
    restored = plan_restore(job)
    tokenizer = load_tokenizer(job.model_dir)
    model = load_causal_lm(job.model_dir, plan.get("precision", "fp32"), device=_device(job))
    if restored is not None:
        model = _inherited_model(model, restored, plan, reporter)
    return restored, tokenizer, model


def finish_training(job: TrainingJob, restored: RestorePlan | None, trainer, callback: ReporterCallback) -> TrainingResult:
    """Drop the checkpoint rebuilt for a restore (the snapshot stays) and say how training went."""
    if restored is not None and restored.checkpoint is not None and job.work_dir in restored.checkpoint.parents:
        shutil.rmtree(restored.checkpoint, ignore_errors=True)
    losses = callback.losses
    return TrainingResult(
        final_step=trainer.state.global_step,
        first_loss=losses[0] if losses else None,
        last_loss=losses[-1] if losses else None,
        stopped_early=callback.stopped_early,
        paused=callback.paused,
    )


def run_sft(job: TrainingJob, reporter: Reporter) -> TrainingResult:
    """Train a LoRA adapter by supervised fine-tuning; snapshots land under job.snapshots_dir."""
    from datasets import Dataset
    from datasets.utils import disable_progress_bars
    from transformers import PrinterCallback
    from transformers.utils import logging as hf_logging
    from trl import SFTTrainer

    # A worker's output is a log file, not a terminal: no progress bars from loading or tokenizing.
    disable_progress_bars()
    hf_logging.disable_progress_bar()

    plan = job.plan
    hp = plan.get("hyperparameters") or {}
    accumulation = int(hp.get("gradientAccumulation") or 1)
    if int(hp.get("batchSize") or 8) % (len(job.devices) * accumulation):
        reporter.event(
            f"batchSize {hp.get('batchSize')} is not a multiple of {len(job.devices)} device(s) times "
            f"gradientAccumulation {accumulation}; the global batch is rounded down",
            level="warn",
        )
    restored, tokenizer, model = load_for_training(job, reporter)
    args = sft_config(job)
    dataset = Dataset.from_list(load_rows(job.dataset_path))
    validation = Dataset.from_list(load_rows(job.validation_path)) if job.validation_path else None
    job.snapshots_dir.mkdir(parents=True, exist_ok=True)
    callback = _callback(job, reporter)
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        eval_dataset=validation,
        processing_class=tokenizer,
        peft_config=_lora_config(plan) if restored is None else None,
        callbacks=[callback],
    )
    trainer.remove_callback(PrinterCallback)  # it prints every log line to stdout
    reporter.event(
        f"training {plan.get('model')} on {len(dataset)} rows on {', '.join(job.devices)}, "
        + (f"validating on {len(validation)} rows, " if validation is not None else "")
        + f"{args.per_device_train_batch_size} row(s) per device per micro-batch"
        + _restore_phrase(job, restored)
    )
    trainer.train(resume_from_checkpoint=str(restored.checkpoint) if restored and restored.checkpoint else None)
    return finish_training(job, restored, trainer, callback)


def _restore_phrase(job: TrainingJob, restored: RestorePlan | None) -> str:
    if restored is None:
        return ""
    step = restored.manifest["step"]
    if restored.checkpoint is not None:
        return f", continuing the training state of step {step} (layout {restored.manifest['layout']})"
    return f", over the adapter of step {step} (layout {restored.manifest['layout']}) with a fresh optimizer"
