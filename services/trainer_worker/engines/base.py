"""What every training engine shares: the job it is given, how it reports, what it returns, and
the snapshot format it writes (SPEC 2.4, 3.3: layout 2).

Plain Python, no torch: the worker and the API can import this without loading a model.

A layout-2 snapshot directory:

    snapshot.json       the manifest (`snapshot_manifest`)
    adapter/            adapter_config.json + adapter_model.safetensors (PEFT, loadable as is)
    training_state/     the Hugging Face Trainer checkpoint minus the adapter: optimizer.pt,
                        scheduler.pt, rng_state*.pth, trainer_state.json, training_args.bin, ...
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

RELEASE = "0.6.0"
SNAPSHOT_LAYOUT = 2
MANIFEST_FILE = "snapshot.json"
ADAPTER_DIR = "adapter"
TRAINING_STATE_DIR = "training_state"
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")


class Reporter(Protocol):
    """Where an engine tells the world how training goes (in production: Redis-backed)."""

    def started(self, *, total_steps: int) -> None:
        """The engine is loaded and about to take step 1."""

    def metrics(self, point: dict) -> None:
        """One point per optimizer step: {"step", "loss", "learningRate", "gradNorm", "tokensPerSecond", "epoch"}."""

    def event(self, message: str, level: str = "info") -> None:
        """One line of the run's event log; level is info, warn or error."""

    def snapshot(self, *, step: int, directory: Path, manifest: dict, final: bool) -> None:
        """A complete layout-2 snapshot directory now exists at `directory`."""

    def should_stop(self) -> bool:
        """True once the user cancelled: the engine stops at the next step boundary."""


@dataclass
class TrainingJob:
    run_id: str
    plan: dict  # the normalized plan, camelCase (docs/api.md)
    engine: str  # e.g. "sft-single"
    model_dir: Path
    dataset_path: Path  # JSONL: rows of chat "messages", or "prompt" + "completion"
    work_dir: Path  # scratch for HF checkpoints; snapshots go under work_dir/"snapshots"
    devices: list[str]  # e.g. ["cpu:0"] or ["cuda:0"]

    @property
    def snapshots_dir(self) -> Path:
        return self.work_dir / "snapshots"

    def snapshot_dir(self, step: int) -> Path:
        return self.snapshots_dir / f"step-{step:06d}"


@dataclass
class TrainingResult:
    final_step: int
    first_loss: float | None
    last_loss: float | None
    stopped_early: bool


def per_device_batch_size(*, global_batch: int, devices: int, gradient_accumulation: int) -> int:
    """SPEC 3.2: batchSize is the global batch, the same whatever the GPU count."""
    return max(1, global_batch // (devices * gradient_accumulation))


def snapshot_manifest(job: TrainingJob, *, step: int, training_state_format: str | None = "hf-trainer") -> dict[str, Any]:
    plan = job.plan
    return {
        "layout": SNAPSHOT_LAYOUT,
        "run": job.run_id,
        "step": step,
        "method": plan.get("method", "sft"),
        "engine": job.engine,
        "precision": plan.get("precision", "fp32"),
        "model": plan.get("model"),
        "gpus": len(job.devices),
        "release": RELEASE,
        "weights": {"format": "peft-safetensors", "path": ADAPTER_DIR},
        "trainingState": (
            {"format": training_state_format, "path": TRAINING_STATE_DIR} if training_state_format else None
        ),
    }


def publish_checkpoint_as_snapshot(job: TrainingJob, *, checkpoint: Path, step: int) -> tuple[Path, dict]:
    """Reorganise an HF Trainer checkpoint of a PEFT model into a layout-2 snapshot and publish it.

    The snapshot appears in one rename, so a reader sees no snapshot or a complete one. The
    checkpoint directory is consumed.
    """
    target = job.snapshot_dir(step)
    staging = job.snapshots_dir / f".staging-{target.name}"
    if staging.exists():
        shutil.rmtree(staging)
    (staging / ADAPTER_DIR).mkdir(parents=True)
    for name in ADAPTER_FILES:
        os.replace(checkpoint / name, staging / ADAPTER_DIR / name)
    os.replace(checkpoint, staging / TRAINING_STATE_DIR)
    manifest = snapshot_manifest(job, step=step)
    (staging / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n")
    if target.exists():
        shutil.rmtree(target)
    os.replace(staging, target)
    return target, manifest


def checkpoint_from_snapshot(snapshot_dir: Path, target: Path) -> Path:
    """An HF Trainer checkpoint directory (`resume_from_checkpoint`) rebuilt from a snapshot with training state.

    Layout 1 (release 0.5) already is such a checkpoint. Layout 2 keeps the adapter apart, so its
    files are copied back beside the training state into `target`.
    """
    manifest = json.loads((snapshot_dir / MANIFEST_FILE).read_text())
    if manifest.get("layout") == 1:
        return snapshot_dir
    state = manifest.get("trainingState") or {}
    if state.get("format") != "hf-trainer":
        raise ValueError(f"snapshot {snapshot_dir} holds no hf-trainer training state")
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(snapshot_dir / state.get("path", TRAINING_STATE_DIR), target)
    weights = snapshot_dir / (manifest.get("weights") or {}).get("path", ADAPTER_DIR)
    for name in ADAPTER_FILES:
        shutil.copy2(weights / name, target / name)
    return target
