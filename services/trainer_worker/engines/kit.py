"""What every training engine is built from (sft.py and grpo.py use it alike).

An engine is TRL's trainer for its method over a PEFT LoRA adapter, with one callback that connects
the HF Trainer to the trainer platform. This module holds the parts that do not depend on the
method:

- **reading the plan**: the job's `TrainingPlan` (shared/plans/training_plan.py), attributes with
  every default filled in (a plan stored before a field existed reads the schema's); engines carry
  no default numbers of their own, and check none of the plan's rules again (the API judged it,
  shared/plans/check.py);
- **loading**: `load_for_training` (what the job restores, checked; the tokenizer; the base model
  in the plan's precision on this process's device, with the inherited adapter when it restores
  one) and `lora_config` for a fresh adapter;
- **restore planning**: `plan_restore` / `RestorePlan` and the phrase an engine's first event ends with;
- **trainer arguments**: `trainer_arguments`, the HF TrainingArguments every engine derives from the plan,
  and `activation_checkpointing`, whether an sft run on CUDA recomputes activations (only when the
  resolver's memory estimate without it does not fit the GPU);
- **memory**: `report_memory_estimate`, the run's estimate per device from the loaded model's shape for
  how it trains here (shared/resolver.py `training_memory_gib`, the same function the checkpointing
  choice reads), and each rank's measured peak when training ends (the callback's `on_train_end`,
  engines/peak_memory.py);
- **the callback**: `ReporterCallback` (metrics, cancel and pause agreed across ranks, every HF
  checkpoint published as a layout-2 snapshot), subclassed by each engine, bound to transformers'
  TrainerCallback by `bind_callback`; `guard_checkpoint_writes`, which makes a full disk under a
  checkpoint a pause (SnapshotDiskFull), not a failure;
- **finishing**: `finish_training`.

Importing this loads no torch; the functions that need it import it when they run.
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
    NothingToTrain,
    Reporter,
    SnapshotDiskFull,
    TrainingJob,
    TrainingResult,
    adapter_dir_of,
    check_restore,
    checkpoint_from_snapshot,
    publish_checkpoint_as_snapshot,
    snapshot_write_failed,
)
from services.trainer_worker.engines import peak_memory
from services.trainer_worker.engines.sharding import fsdp_arguments, shards, write_adapter
from shared import reasons
from shared.errors import WorkFailed
from shared.models import load_causal_lm, load_tokenizer
from shared.plans import EPOCHS_WITHOUT_MAX_STEPS, TrainingPlan
from shared.resolver import CPU, CUDA, GIB, trainer_memory_gib, training_memory_gib

# A save_steps no run reaches: with save_strategy "steps" the Trainer still saves at the last step.
NEVER = 10**12


def quiet_progress() -> None:
    """A worker's output is a log file, not a terminal: no progress bars from loading or tokenizing."""
    from datasets.utils import disable_progress_bars
    from transformers.utils import logging as hf_logging

    disable_progress_bars()
    hf_logging.disable_progress_bar()


# --- Loading the model, the tokenizer and the adapter


def lora_config(plan: TrainingPlan):
    """The PEFT LoraConfig of a fresh adapter. Alpha is a float (scaling = alpha / rank), as the plan
    and PEFT both take it."""
    from peft import LoraConfig

    adapter = plan.adapter
    targets = adapter.target_modules
    return LoraConfig(
        r=int(adapter.rank),
        lora_alpha=float(adapter.alpha),
        lora_dropout=float(adapter.dropout),
        target_modules=targets if isinstance(targets, str) else list(targets),
        task_type="CAUSAL_LM",
    )


def adapter_differences(plan: TrainingPlan, inherited: dict) -> list[str]:
    """How the plan's adapter settings differ from an inherited adapter_config.json, one phrase each.

    targetModules "all-linear" is compared by nothing: PEFT stores the module names it expanded
    to, which the plan cannot name in advance.
    """
    adapter = plan.adapter
    differences = []
    for field, value, key, cast in (("rank", adapter.rank, "r", int), ("alpha", adapter.alpha, "lora_alpha", float),
                                    ("dropout", adapter.dropout, "lora_dropout", float)):
        if cast(value) != cast(inherited.get(key)):
            differences.append(f"{field} {value} planned, {inherited.get(key)} inherited")
    wanted = adapter.target_modules
    if not adapter.every_linear_layer:
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

    @property
    def resume_from(self) -> str | None:
        """What the Trainer's `train(resume_from_checkpoint=...)` takes: the rebuilt checkpoint, if any."""
        return str(self.checkpoint) if self.checkpoint is not None else None


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


def restore_phrase(restored: RestorePlan | None) -> str:
    """How an engine's first event ends: what the run continues from, if anything."""
    if restored is None:
        return ""
    step = restored.manifest["step"]
    if restored.checkpoint is not None:
        return reasons.restore_continuing(step, restored.manifest["layout"])
    return reasons.restore_over_adapter(step, restored.manifest["layout"])


def _inherited_model(model, restored: RestorePlan, plan: TrainingPlan, reporter: Reporter):
    """The base model with the snapshot's adapter, trainable, under the adapter's own LoRA config."""
    from peft import PeftModel

    inherited = json.loads((restored.adapter_dir / "adapter_config.json").read_text())
    differences = adapter_differences(plan, inherited)
    if differences:
        reporter.event(reasons.inherited_adapter_config_used("; ".join(differences)), level="warn")
    return PeftModel.from_pretrained(model, str(restored.adapter_dir), is_trainable=True)


def _device(job: TrainingJob) -> str:
    if job.devices[0].startswith("cpu"):
        return "cpu"
    return f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"


def load_for_training(job: TrainingJob, reporter: Reporter):
    """(restored, tokenizer, model): what the job restores, checked, and the base model in the plan's
    precision on this process's device, with the inherited adapter when it restores one."""
    plan = job.plan
    restored = plan_restore(job)
    started = time.monotonic()
    tokenizer = load_tokenizer(job.model_dir)
    model = load_causal_lm(job.model_dir, plan.precision, device=_device(job))
    # where a run's start-up goes (bench/platform_overhead.py reads it): the model apart from the data
    reporter.event(reasons.model_loaded(plan.model, sum(p.numel() for p in model.parameters()) / 1e6,
                                        plan.precision, time.monotonic() - started))
    if restored is not None:
        model = _inherited_model(model, restored, plan, reporter)
    return restored, tokenizer, model


# --- Activation checkpointing: recompute each layer's activations in the backward, or keep them

# Without checkpointing a step over a frozen base costs a forward and a backward (input gradients
# only); with it, one more forward: a third of the step. So an sft run on CUDA keeps its activations
# when the resolver's estimate without checkpointing (margin included) fits this share of the GPU's
# memory: the rest is for what max_memory_allocated does not count (the CUDA context, the
# allocator's reserve). The run then reports that same estimate as its own.
KEEP_ACTIVATIONS_SHARE = 0.8


def model_facts(model) -> dict[str, Any]:
    """What the resolver's memory estimate reads of a catalog entry, from a loaded model: the base
    model's parameter count (an inherited adapter's left out) and its text shape."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    config = base.config.get_text_config() if hasattr(base.config, "get_text_config") else base.config
    return {
        "parameters": sum(p.numel() for name, p in base.named_parameters() if "lora_" not in name),
        "hiddenSize": int(config.hidden_size),
        "layers": int(config.num_hidden_layers),
        "vocabSize": int(config.vocab_size),
        "intermediateSize": getattr(config, "intermediate_size", None),
    }


def keeps_activations(plan: TrainingPlan, facts: dict[str, Any], gpu_gib: float) -> tuple[bool, float]:
    """(whether a run of `plan` on GPUs of `gpu_gib` trains without activation checkpointing, the
    estimate without it in GiB)."""
    needs = trainer_memory_gib(plan, model=facts, activation_checkpointing=False)
    return needs <= KEEP_ACTIVATIONS_SHARE * gpu_gib, needs


def activation_checkpointing(job: TrainingJob, model) -> tuple[bool, str | None]:
    """Whether this process trains with activation checkpointing, and the event that says why (None
    on CPU, where it never does: a CPU run's models are small, and recomputation only slows it)."""
    if job.devices[0].startswith("cpu"):
        return False, None
    import torch

    gpu_gib = torch.cuda.get_device_properties(torch.device(_device(job))).total_memory / GIB
    keep, needs = keeps_activations(job.plan, model_facts(model), gpu_gib)
    return not keep, reasons.activation_checkpointing_chosen(on=not keep, needs_gib=needs, gpu_gib=gpu_gib,
                                                             share=KEEP_ACTIVATIONS_SHARE)


# --- The run's memory: estimated once the model is loaded, measured when training ends


def report_memory_estimate(job: TrainingJob, reporter: Reporter, model, *, checkpointing: bool | None) -> float:
    """Tell the run what this job is estimated to need per device (shared/resolver.py
    `training_memory_gib`, from the loaded model's own shape), for how the engine trains it here:
    `checkpointing` as chosen (None: as trainer_arguments defaults it, on CUDA always, never on CPU)."""
    on_cpu = job.devices[0].startswith("cpu")
    if checkpointing is None:
        checkpointing = not on_cpu
    estimate = training_memory_gib(job.plan, model=model_facts(model), sharded=shards(job.engine),
                                   device=CPU if on_cpu else CUDA, activation_checkpointing=checkpointing)
    reporter.memory(estimate_gib=estimate, activation_checkpointing=checkpointing,
                    measured_as=peak_memory.measured_as(on_cpu))
    return estimate


# --- The HF TrainingArguments every engine derives


def trainer_arguments(job: TrainingJob, *, checkpointing: bool | None = None) -> dict[str, Any]:
    """The HF TrainingArguments every engine derives from the plan alone (SFT and GRPO alike):
    the global batch split over devices, the schedule, precision, snapshot interval, DDP backend.
    `checkpointing`: activation checkpointing as `activation_checkpointing` chose it; None: on CUDA
    always (the GRPO engine's, whose GPU the rollout server shares), never on CPU."""
    plan, hp = job.plan, job.plan.hyperparameters
    precision = plan.precision
    on_cpu = job.devices[0].startswith("cpu")
    arguments = dict(
        output_dir=str(job.work_dir / "hf"),
        # SPEC 3.2: batchSize is the global batch, split over the devices (the API refused a plan
        # whose batch does not split evenly)
        per_device_train_batch_size=hp.micro_batch(len(job.devices)),
        gradient_accumulation_steps=int(hp.gradient_accumulation),
        learning_rate=float(hp.learning_rate),
        max_steps=int(hp.max_steps) if hp.max_steps else -1,  # -1: the Trainer counts epochs
        # parse_plan gives epochs whenever maxSteps is unset; with maxSteps the Trainer ignores it
        num_train_epochs=float(hp.epochs) if hp.epochs else EPOCHS_WITHOUT_MAX_STEPS,
        warmup_steps=int(hp.warmup_steps),
        seed=int(hp.seed),
        bf16=precision == "bf16",
        fp16=precision == "fp16",
        use_cpu=on_cpu,
        activation_checkpointing=(not on_cpu) if checkpointing is None else checkpointing,
        logging_steps=1,
        save_strategy="steps",
        save_steps=plan.snapshots.every_steps or NEVER,
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
        # Several devices (engines.distributed starts one process each): gloo between CPU slots,
        # NCCL between GPUs. Every LoRA parameter takes part in each step.
        ddp_backend=("gloo" if on_cpu else "nccl") if len(job.devices) > 1 else None,
        ddp_find_unused_parameters=False if len(job.devices) > 1 else None,
    )
    if shards(job.engine):  # FSDP2 in place of DDP (engines/sharding.py)
        arguments.update(fsdp_arguments(on_cpu=on_cpu))
    return arguments


# --- Stopping together across ranks

# A stop request as one integer, so that rank 0 can broadcast it to the other ranks.
_STOP_CODES = (None, STOP_CANCEL, STOP_PAUSE)


def _distributed() -> bool:
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def agree_on_stop(request: str | None) -> str | None:
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


def barrier() -> None:
    if _distributed():
        import torch.distributed as dist

        dist.barrier()


# --- The callback


class ReporterCallback:
    """Connects the HF Trainer's events to a Reporter: one metrics point per optimizer step, cancel
    and pause at a step boundary (rank 0 decides, every rank stops), every checkpoint published as a
    snapshot by rank 0. Engines subclass it for their own points; `bind_callback` makes an instance
    a transformers TrainerCallback (imported only then)."""

    def __init__(self, job: TrainingJob, reporter: Reporter):
        self.job = job
        self.reporter = reporter
        self.rollout_server = None  # grpo: its rollout server (a process whose peak counts with this rank's)
        self.losses: list[float] = []
        self.stopped_early = False
        self.paused = False
        self.start_step = 0  # the Trainer's step as training began: a restored training state's
        self._last_time = 0.0
        self._last_tokens = 0

    def on_train_begin(self, args, state, control, **kwargs):
        self._last_time = time.monotonic()
        self._last_tokens = state.num_input_tokens_seen
        self.start_step = state.global_step  # the Trainer loads a checkpoint's state before this call
        self.reporter.started(total_steps=state.max_steps)
        if state.global_step >= state.max_steps:  # else the Trainer takes one step past its plan's end
            raise NothingToTrain(start_step=state.global_step, end_step=state.max_steps)

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step >= state.max_steps:
            return
        request = agree_on_stop(self.reporter.stop_request() if state.is_world_process_zero else None)
        if request is None:
            return
        self.stopped_early = True
        control.should_training_stop = True
        if request == STOP_PAUSE:
            # The Trainer saves right after this callback (optimizer, scheduler, RNG of every rank,
            # data position): on_save publishes it as the snapshot the run resumes from.
            self.paused = True
            control.should_save = True
            self.reporter.event(reasons.pausing_at(state.global_step))
        else:
            self.reporter.event(reasons.stopping_cancelled_at(state.global_step))

    def step_point(self, state, logs: dict[str, Any]) -> dict[str, Any]:
        """The metrics every engine reports for a step, from the Trainer's log of it."""
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
        return point

    def on_train_end(self, args, state, control, **kwargs):
        """Every rank measures its peak (peak_memory.py); rank 0 reports them all."""
        server = self.rollout_server.peak_bytes() if self.rollout_server is not None else None
        entry = peak_memory.rank_peak(int(os.environ.get("RANK", "0")),
                                      trainer_bytes=peak_memory.own_peak_bytes(self.job.devices[0].startswith("cpu")),
                                      server_bytes=server)
        ranks = peak_memory.gathered(entry)
        if state.is_world_process_zero:
            self.reporter.memory(ranks=ranks)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or "loss" not in logs:  # the end-of-training summary has train_loss instead
            return
        point = self.step_point(state, logs)
        self.reporter.metrics(point)
        if not math.isfinite(point["loss"]):  # diverged: every step after it would train on NaN
            raise WorkFailed(reasons.loss_not_finite(step=point["step"], loss=point["loss"],
                                                     learning_rate=point["learningRate"]))

    def on_save(self, args, state, control, model=None, **kwargs):
        checkpoint = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if shards(self.job.engine):  # every rank: the adapter's shards are gathered
            try:
                write_adapter(model, checkpoint, main=state.is_world_process_zero)
            except Exception as exc:
                if snapshot_write_failed(self.job, exc, step=state.global_step, checkpoint=checkpoint):
                    raise SnapshotDiskFull(state.global_step) from exc
                raise
        # The Trainer saves every save_steps, at max_steps and when on_step_end asked for a pause,
        # not when a callback cancelled: a cancelled run keeps its periodic snapshots and writes no
        # final one. Every rank writes its own rng_state_R.pth into the checkpoint with no barrier
        # after it, so all ranks meet here before rank 0 moves the checkpoint into a snapshot.
        barrier()
        if not state.is_world_process_zero:
            return
        step = state.global_step
        final = step >= state.max_steps
        key, manifest = publish_checkpoint_as_snapshot(self.job, checkpoint=checkpoint, step=step)
        self.reporter.snapshot(step=step, key=key, directory=self.job.snapshot_dir(step), manifest=manifest,
                               final=final)


def bind_callback(cls: type[ReporterCallback], *args, **kwargs):
    """An instance of `cls` that is also a transformers TrainerCallback (imported here, not at import)."""
    from transformers import TrainerCallback

    bound = type(cls.__name__, (cls, TrainerCallback), {})
    return bound(*args, **kwargs)


def guard_checkpoint_writes(trainer, job: TrainingJob):
    """The trainer, its checkpoint writes (the adapter, optimizer, scheduler, RNG and trainer state
    that become a snapshot) turning a full disk into SnapshotDiskFull: the run pauses instead of
    failing (issue 26). Wraps the Trainer's own `_save_checkpoint`, where those writes happen."""
    save = trainer._save_checkpoint

    def save_checkpoint(model, trial):
        try:
            return save(model, trial)
        except Exception as exc:
            step = trainer.state.global_step
            checkpoint = Path(trainer.args.output_dir) / f"checkpoint-{step}"
            if snapshot_write_failed(job, exc, step=step, checkpoint=checkpoint):
                raise SnapshotDiskFull(step) from exc
            raise

    trainer._save_checkpoint = save_checkpoint
    return trainer


def without_printer(trainer):
    """The trainer without transformers' PrinterCallback, which prints every log line to stdout."""
    from transformers import PrinterCallback

    trainer.remove_callback(PrinterCallback)
    return trainer


# --- Finishing


def finish_training(job: TrainingJob, restored: RestorePlan | None, trainer,
                    callback: ReporterCallback) -> TrainingResult:
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
        start_step=callback.start_step,
    )
