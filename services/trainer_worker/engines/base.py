"""What every training engine shares: the job it is given, how it reports, what it returns, and
how an HF Trainer checkpoint becomes a snapshot of the format in shared/snapshots/manifest.py and back.

Plain Python, no torch: the worker imports this without loading a model.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from shared import reasons
from shared.errors import WorkFailed
from shared.planning.engines import RESTORE_TRAINING_STATE, RESTORE_WEIGHTS
from shared.planning.engines import engine as declared_engine
from shared.plans import TrainingPlan
from shared.process.disk_full import disk_full, no_space_left
from shared.snapshots import manifest as snapshots
from shared.snapshots.files import record
from shared.store.artifacts import ArtifactRoot, ArtifactStore, join
from shared.snapshots.manifest import (
    ADAPTER_DIR,
    ADAPTER_FILES,
    TRAINING_STATE_DIR,
    adapter_dir_of,
    read_manifest,
    readable_parts,
)


class Reporter(Protocol):
    """Where an engine tells the world how training goes (in production: Redis-backed)."""

    def started(self, *, total_steps: int) -> None:
        """The engine is loaded and about to take step 1."""

    def metrics(self, point: dict) -> None:
        """One point per optimizer step: {"step", "loss", "learningRate", "gradNorm", "tokensPerSecond", "epoch"}."""

    def event(self, message: str, level: str = "info") -> None:
        """One line of the run's event log; level is info, warn or error."""

    def samples(self, sample: dict) -> None:
        """grpo: a bounded sample of one step's rollouts (shared/rollout_samples.step_sample)."""

    def snapshot(self, *, step: int, key: str, directory: Path, manifest: dict, final: bool) -> None:
        """A complete layout-2 snapshot is published at `key` of the artifact store (`directory`: a
        local copy of it)."""

    def memory(self, *, estimate_gib: float | None = None, activation_checkpointing: bool | None = None,
               measured_as: str | None = None, ranks: list[dict] | None = None) -> None:
        """What the run needs per device: its estimate once the model is loaded (`estimate_gib`, how
        it trains, how its peak is measured), then when training ends every rank's measured peak
        (`ranks`: engines/peak_memory.py `rank_peak` entries)."""

    def stop_request(self) -> str | None:
        """Polled at each step end: None (go on), "cancel" or "pause" (STOP_CANCEL, STOP_PAUSE).

        cancel: stop at this step boundary and write no final snapshot.
        pause: stop at this step boundary after writing a snapshot with training state (final=False).
        """


# What Reporter.stop_request answers besides None.
STOP_CANCEL = "cancel"
STOP_PAUSE = "pause"

# What Restore.what names (the plan's restore.what): RESTORE_WEIGHTS, RESTORE_TRAINING_STATE.


@dataclass
class Restore:
    """What a run starts from: a snapshot's adapter weights, or its whole training state."""

    what: str  # RESTORE_WEIGHTS | RESTORE_TRAINING_STATE
    snapshot_dir: Path  # a snapshot directory of layout 1 or 2 (its snapshot.json says which)


@dataclass
class TrainingJob:
    run_id: str
    plan: TrainingPlan  # the run's plan, every default filled in (shared/plans/training_plan.py)
    engine: str  # e.g. "sft-single"
    model_dir: Path
    dataset_path: Path  # JSONL: rows of chat "messages", or "prompt" + "completion"
    work_dir: Path  # scratch for HF checkpoints; snapshots go under work_dir/"snapshots"
    devices: list[str]  # e.g. ["cpu:0"] or ["cuda:0"]
    restore: Restore | None = None  # a branch, or a run resuming itself after pause / a lost worker
    # grpo: a judge endpoint (its id or name) -> shared.rewards.judges.JudgeTarget (address, served model) while it is
    # READY, else None; read fresh each call
    judge_address: Callable[[str], Any] | None = None
    # grpo: the deployment's registered reward functions, name -> "package.module:function"
    reward_functions: dict[str, str] = field(default_factory=dict)
    validation_path: Path | None = None  # the plan's validationDataset (JSONL), scored every few steps
    # Where snapshots are published: the deployment's artifact store under `snapshot_prefix` (the
    # worker passes runs/RUN/snapshots); by default a store over work_dir, under "snapshots".
    artifacts: ArtifactStore | None = None
    snapshot_prefix: str = "snapshots"

    @property
    def store(self) -> ArtifactStore:
        return self.artifacts if self.artifacts is not None else ArtifactRoot(self.work_dir)

    @property
    def snapshots_dir(self) -> Path:
        """Scratch where snapshots are put together before they are published."""
        return self.work_dir / "snapshots"

    def snapshot_key(self, step: int) -> str:
        return join(self.snapshot_prefix, f"step-{step:06d}")

    def snapshot_dir(self, step: int) -> Path:
        """A local copy of the snapshot published at `step`."""
        return self.store.get_dir(self.snapshot_key(step))


class SnapshotDiskFull(Exception):
    """A snapshot could not be written for want of space (shared/process/disk_full.py). Not a failure of
    the run: the worker pauses it with this sentence, its half-written snapshot removed and its
    earlier ones kept, and `training runs resume` continues it once space is freed."""

    def __init__(self, step: int):
        super().__init__(reasons.run_paused_disk_full(step))
        self.step = step


class NothingToTrain(WorkFailed):
    """Training would start at or past the step its plan ends at (issue 30): the Trainer would
    still take one step past it, so the engine stops before any. The API refuses such branches at
    submission; this is the guard for what it could only estimate (a plan by epochs) and for a
    resumed run whose own snapshot is already at its last step (the worker ends that SUCCEEDED)."""

    def __init__(self, *, start_step: int, end_step: int):
        super().__init__(reasons.run_trained_no_step(start_step=start_step, end_step=end_step))
        self.start_step, self.end_step = start_step, end_step


def snapshot_write_failed(job: TrainingJob, exc: BaseException, *, step: int, checkpoint: Path) -> bool:
    """Whether `exc`, raised while the snapshot of `step` was written, was for want of space. If so,
    what it half-wrote (the HF checkpoint, the staging directory) is removed, which also gives the
    space back. A writer that fails without saying why (torch.save) is judged by the filesystem."""
    if not (disk_full(exc) or no_space_left(job.work_dir)):
        return False
    shutil.rmtree(checkpoint, ignore_errors=True)
    shutil.rmtree(job.snapshots_dir / f".staging-step-{step:06d}", ignore_errors=True)
    return True


@dataclass
class TrainingResult:
    final_step: int
    first_loss: float | None
    last_loss: float | None
    stopped_early: bool
    paused: bool = False  # stopped on a pause request, after writing a snapshot with training state
    start_step: int = 0  # the step training started from (a restored training state's); final_step - start_step trained

    @property
    def trained_steps(self) -> int:
        """The steps this attempt took (0: none, which the worker never reports as a success in silence)."""
        return max(self.final_step - self.start_step, 0)


def training_state_format(engine: str) -> str:
    """The format an engine's HF checkpoints have: sharded DCP under FSDP2, else the plain Trainer's."""
    if declared_engine(engine).shards_weights:
        return snapshots.SHARDED_TRAINING_STATE_FORMAT
    return snapshots.TRAINING_STATE_FORMAT


def snapshot_manifest(job: TrainingJob, *, step: int, files: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    plan = job.plan
    return snapshots.manifest(run_id=job.run_id, step=step, method=plan.method, engine=job.engine,
                              precision=plan.precision, model=plan.model, gpus=len(job.devices),
                              training_state_format=training_state_format(job.engine), files=files)


def publish_checkpoint_as_snapshot(job: TrainingJob, *, checkpoint: Path, step: int) -> tuple[str, dict]:
    """Reorganise an HF Trainer checkpoint of a PEFT model into a layout-2 snapshot and publish it
    at `job.snapshot_key(step)` of the artifact store (`put_dir`: a reader sees no snapshot or a
    complete one). The checkpoint directory is consumed. Returns the key and the manifest, which
    lists every file with its size and sha256 (an import elsewhere is held to them).

    A full disk raises SnapshotDiskFull, with nothing of this snapshot left behind."""
    key = job.snapshot_key(step)
    staging = job.snapshots_dir / f".staging-step-{step:06d}"
    try:
        if staging.exists():
            shutil.rmtree(staging)
        (staging / ADAPTER_DIR).mkdir(parents=True)
        for name in ADAPTER_FILES:
            os.replace(checkpoint / name, staging / ADAPTER_DIR / name)
        os.replace(checkpoint, staging / TRAINING_STATE_DIR)
        manifest = snapshot_manifest(job, step=step, files=record(staging))
        snapshots.write_manifest(staging, manifest)
        job.store.put_dir(staging, key, move=True)
    except OSError as exc:
        if snapshot_write_failed(job, exc, step=step, checkpoint=checkpoint):
            raise SnapshotDiskFull(step) from exc
        raise
    return key, manifest


def check_restore(job: TrainingJob) -> dict[str, Any] | None:
    """The manifest of what `job` restores, once checked that this job can restore it; raises
    WorkFailed with the user's sentence otherwise (the API refuses such plans first, SPEC 3.3)."""
    if job.restore is None:
        return None
    manifest = read_manifest(job.restore.snapshot_dir)
    parts = readable_parts(manifest)
    if job.restore.what not in (RESTORE_WEIGHTS, RESTORE_TRAINING_STATE):
        raise ValueError(f"restore.what must be {RESTORE_WEIGHTS} or {RESTORE_TRAINING_STATE}, not {job.restore.what}")
    if not parts["weights"]:
        raise WorkFailed(reasons.WEIGHTS_UNREADABLE)
    if job.restore.what == RESTORE_TRAINING_STATE:
        if not parts["trainingState"]:
            raise WorkFailed(reasons.TRAINING_STATE_UNREADABLE)
        if int(manifest["gpus"]) != len(job.devices):
            raise WorkFailed(
                reasons.training_state_gpu_mismatch(saved_gpus=int(manifest["gpus"]), run_gpus=len(job.devices))
            )
    return manifest


def checkpoint_from_snapshot(snapshot_dir: Path, target: Path) -> Path:
    """An HF Trainer checkpoint directory (`resume_from_checkpoint`) rebuilt from a snapshot with training state.

    Layout 1 (release 0.5) already is such a checkpoint and is returned as it is (the Trainer only
    reads it). Layout 2 keeps the adapter apart, so its files are copied back beside the training
    state into `target`.
    """
    snapshot_dir = Path(snapshot_dir)
    manifest = read_manifest(snapshot_dir)
    if not readable_parts(manifest)["trainingState"]:
        raise WorkFailed(reasons.snapshot_training_state_unreadable(snapshot_dir.name))
    if manifest["layout"] == 1:
        return snapshot_dir
    state = manifest["trainingState"]
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(snapshot_dir / state.get("path", TRAINING_STATE_DIR), target)
    weights = adapter_dir_of(snapshot_dir, manifest)
    for name in ADAPTER_FILES:
        shutil.copy2(weights / name, target / name)
    return target
