"""The single-device SFT engine ("sft-single"): TRL's SFTTrainer over a PEFT LoRA adapter.

The Hugging Face Trainer does the training; two callbacks connect it to the trainer platform:
`ReporterCallback` sends metrics, honours cancellation and turns every HF checkpoint into a
layout-2 snapshot (base.publish_checkpoint_as_snapshot). Checkpoints are saved every
`snapshots.everySteps` steps and always at the last step, except when the user cancelled.

On CUDA the worker exposes the granted GPU to this process (CUDA_VISIBLE_DEVICES), so the
engine sees it as the current device.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from services.trainer_worker.engines.base import (
    Reporter,
    TrainingJob,
    TrainingResult,
    per_device_batch_size,
    publish_checkpoint_as_snapshot,
)
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


class ReporterCallback:
    """Connects the HF Trainer's events to a Reporter. Built lazily on a TrainerCallback (see _callback)."""

    def __init__(self, job: TrainingJob, reporter: Reporter):
        self.job = job
        self.reporter = reporter
        self.losses: list[float] = []
        self.stopped_early = False
        self._last_time = 0.0
        self._last_tokens = 0

    def on_train_begin(self, args, state, control, **kwargs):
        self._last_time = time.monotonic()
        self._last_tokens = state.num_input_tokens_seen
        self.reporter.started(total_steps=state.max_steps)

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step < state.max_steps and self.reporter.should_stop():
            self.stopped_early = True
            control.should_training_stop = True
            self.reporter.event(f"stopping at step {state.global_step}: the run was cancelled")

    def on_log(self, args, state, control, logs=None, **kwargs):
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
        # The Trainer saves every save_steps and at max_steps, not when a callback stops it early:
        # a cancelled run keeps its periodic snapshots and writes no final one.
        step = state.global_step
        final = step >= state.max_steps
        checkpoint = Path(args.output_dir) / f"checkpoint-{step}"
        directory, manifest = publish_checkpoint_as_snapshot(self.job, checkpoint=checkpoint, step=step)
        self.reporter.snapshot(step=step, directory=directory, manifest=manifest, final=final)


def _callback(job: TrainingJob, reporter: Reporter):
    from transformers import TrainerCallback

    class _Bound(ReporterCallback, TrainerCallback):
        pass

    return _Bound(job, reporter)


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


def sft_config(job: TrainingJob):
    """The TRL SFTConfig this job trains with, derived from the plan alone."""
    from trl import SFTConfig

    plan = job.plan
    hp = plan.get("hyperparameters") or {}
    precision = plan.get("precision", "fp32")
    on_cpu = job.devices[0].startswith("cpu")
    accumulation = int(hp.get("gradientAccumulation") or 1)
    return SFTConfig(
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
        max_length=int(hp.get("maxSeqLength") or 1024),
        bf16=precision == "bf16",
        fp16=precision == "fp16",
        use_cpu=on_cpu,
        activation_checkpointing=not on_cpu,  # a CPU run's models are small; recomputation only slows it
        logging_steps=1,
        save_strategy="steps",
        save_steps=_save_steps(plan),
        include_num_input_tokens_seen="non_padding",
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
        packing=False,
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
    args = sft_config(job)
    device = "cpu" if job.devices[0].startswith("cpu") else "cuda"
    tokenizer = load_tokenizer(job.model_dir)
    model = load_causal_lm(job.model_dir, plan.get("precision", "fp32"), device=device)
    dataset = Dataset.from_list(load_rows(job.dataset_path))
    job.snapshots_dir.mkdir(parents=True, exist_ok=True)
    callback = _callback(job, reporter)
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=_lora_config(plan),
        callbacks=[callback],
    )
    trainer.remove_callback(PrinterCallback)  # it prints every log line to stdout
    reporter.event(
        f"training {plan.get('model')} on {len(dataset)} rows on {', '.join(job.devices)}, "
        f"{args.per_device_train_batch_size} row(s) per device per micro-batch"
    )
    trainer.train()
    losses = callback.losses
    return TrainingResult(
        final_step=trainer.state.global_step,
        first_loss=losses[0] if losses else None,
        last_loss=losses[-1] if losses else None,
        stopped_early=callback.stopped_early,
    )
