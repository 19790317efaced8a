"""What every training engine shares: the job it is given, how it reports, what it returns, and
the snapshot format it writes (SPEC 2.4, 3.3: layout 2).

Plain Python, no torch: the worker and the API can import this without loading a model. The API
uses `read_manifest` and `readable_parts` to register imported snapshots and refuse branches.

A layout-2 snapshot directory:

    snapshot.json       the manifest (`snapshot_manifest`)
    adapter/            adapter_config.json + adapter_model.safetensors (PEFT, loadable as is)
    training_state/     the Hugging Face Trainer checkpoint minus the adapter: optimizer.pt,
                        scheduler.pt, rng_state*.pth, trainer_state.json, training_args.bin, ...

A layout-1 directory (release 0.5) is an HF Trainer checkpoint of a PEFT model saved on one GPU,
adapter files included, plus a snapshot.json without parts; `read_manifest` describes its parts.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Callable, Protocol

from shared.engines import RESTORE_TRAINING_STATE, RESTORE_WEIGHTS

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
    plan: dict  # the normalized plan, camelCase (docs/api.md)
    engine: str  # e.g. "sft-single"
    model_dir: Path
    dataset_path: Path  # JSONL: rows of chat "messages", or "prompt" + "completion"
    work_dir: Path  # scratch for HF checkpoints; snapshots go under work_dir/"snapshots"
    devices: list[str]  # e.g. ["cpu:0"] or ["cuda:0"]
    restore: Restore | None = None  # a branch, or a run resuming itself after pause / a lost worker
    # grpo: a judge endpoint (its id or name) -> judges.JudgeTarget (address, served model) while it is
    # READY, else None; read fresh each call
    judge_address: Callable[[str], Any] | None = None
    # grpo: the deployment's registered reward functions, name -> "package.module:function"
    reward_functions: dict[str, str] = field(default_factory=dict)
    validation_path: Path | None = None  # the plan's validationDataset (JSONL), scored every few steps

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
    paused: bool = False  # stopped on a pause request, after writing a snapshot with training state


def per_device_batch_size(*, global_batch: int, devices: int, gradient_accumulation: int) -> int:
    """SPEC 3.2: batchSize is the global batch, the same whatever the GPU count. The API refuses a
    plan whose batch does not split evenly (reasons.batch_not_split); rounding down here only
    guards runs stored before that check."""
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


# --- Reading snapshot directories of any layout (SPEC 3.3)

MANIFEST_KEYS = ("layout", "model", "method", "step", "gpus", "precision")
LAYOUT1_ADAPTER_FILES = ("adapter_model.safetensors", "adapter_model.bin")  # either one, in this preference
LAYOUT1_STATE_FILES = ("optimizer.pt", "scheduler.pt", "trainer_state.json")
# The formats this deployment reads. A DeepSpeed-sharded state ("deepspeed-zero3") is not among
# them: no engine here restores one, with or without DeepSpeed installed.
READABLE_WEIGHTS_FORMATS = frozenset({"peft-safetensors", "peft-bin"})
READABLE_TRAINING_STATE_FORMATS = frozenset({"hf-trainer"})


def read_manifest(snapshot_dir: Path) -> dict[str, Any]:
    """The snapshot's manifest, validated. Raises ValidationFailed naming what is wrong.

    A layout-1 manifest lists no parts; they are described here from the files the directory holds
    (an HF Trainer checkpoint: `weights` in PEFT .safetensors or .bin, `trainingState` hf-trainer),
    with `path` ".", so every caller reads parts the same way whatever the layout.
    """
    from shared.errors import ValidationFailed

    snapshot_dir = Path(snapshot_dir)
    path = snapshot_dir / MANIFEST_FILE
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValidationFailed(f"{snapshot_dir} holds no {MANIFEST_FILE}", details={"path": str(path)}) from None
    except (OSError, ValueError) as exc:
        raise ValidationFailed(f"{path} is not a JSON manifest: {exc}", details={"path": str(path)}) from None
    if not isinstance(manifest, dict):
        raise ValidationFailed(f"{path} is not a JSON object", details={"path": str(path)})
    missing = [k for k in MANIFEST_KEYS if k not in manifest]
    if missing:
        raise ValidationFailed(f"{path} lacks {', '.join(missing)}", details={"path": str(path), "missing": missing})
    if manifest["layout"] == 1:  # its parts come from its files, whatever it says of them
        manifest = {**manifest, **_layout1_parts(snapshot_dir)}
    _check_manifest_fields(manifest, path)
    return manifest


def _whole(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _inside(value: Any) -> bool:
    """A path relative to the snapshot directory that stays inside it ("." is the directory itself)."""
    if not isinstance(value, str) or not value:
        return False
    parts = PurePosixPath(value.replace("\\", "/"))
    return not parts.is_absolute() and not PureWindowsPath(value).drive and ".." not in parts.parts


# field -> (what it must be, the test); optional fields may also be absent
_MANIFEST_FIELDS: dict[str, tuple[str, Any]] = {
    "layout": ("a whole number of at least 1", lambda v: _whole(v, 1)),
    "step": ("a whole number of 0 or more", lambda v: _whole(v, 0)),
    "gpus": ("a whole number of at least 1", lambda v: _whole(v, 1)),
    "model": ("a non-empty string", lambda v: isinstance(v, str) and bool(v)),
    "method": ("a non-empty string", lambda v: isinstance(v, str) and bool(v)),
    "precision": ("a non-empty string", lambda v: isinstance(v, str) and bool(v)),
    "engine": ("a string or null", lambda v: v is None or isinstance(v, str)),
    "run": ("a string or null", lambda v: v is None or isinstance(v, str)),
    "weights": ("a JSON object or null", lambda v: v is None or isinstance(v, dict)),
    "trainingState": ("a JSON object or null", lambda v: v is None or isinstance(v, dict)),
}
_PART_FIELDS: dict[str, tuple[str, Any]] = {
    "format": ("a non-empty string", lambda v: isinstance(v, str) and bool(v)),
    "path": ("a relative path inside the snapshot directory", _inside),
}


def _check_manifest_fields(manifest: dict[str, Any], path: Path) -> None:
    """Every field a reader of the manifest uses has the type it needs (a 400 naming the first that
    does not), so nothing downstream meets a string where it wants an object."""
    from shared import reasons
    from shared.errors import ValidationFailed

    def refuse(name: str, must: str, value: Any) -> None:
        raise ValidationFailed(reasons.manifest_field_invalid(str(path), name, must, value),
                               details={"path": str(path), "manifestField": name})

    for name, (must, ok) in _MANIFEST_FIELDS.items():
        if name in manifest and not ok(manifest[name]):
            refuse(name, must, manifest[name])
    for part in ("weights", "trainingState"):
        for name, (must, ok) in _PART_FIELDS.items():
            if manifest.get(part) is None or (name == "path" and name not in manifest[part]):
                continue  # a part may be absent; its path defaults to the part's directory
            if not ok(manifest[part].get(name)):
                refuse(f"{part}.{name}", must, manifest[part].get(name))


def _layout1_parts(snapshot_dir: Path) -> dict[str, Any]:
    adapter = next((n for n in LAYOUT1_ADAPTER_FILES if (snapshot_dir / n).is_file()), None)
    weights = None
    if adapter and (snapshot_dir / "adapter_config.json").is_file():
        weights = {"format": "peft-safetensors" if adapter.endswith(".safetensors") else "peft-bin",
                   "path": ".", "file": adapter}
    state = None
    # The random state too: without it a resume draws other batches and dropout masks, so it would
    # not continue the run exactly; such a directory restores its weights only. One process wrote
    # rng_state.pth, several wrote rng_state_RANK.pth.
    rng = (snapshot_dir / "rng_state.pth").is_file() or any(snapshot_dir.glob("rng_state_*.pth"))
    if rng and all((snapshot_dir / n).is_file() for n in LAYOUT1_STATE_FILES):
        state = {"format": "hf-trainer", "path": "."}
    return {"weights": weights, "trainingState": state}


def readable_parts(manifest: dict[str, Any]) -> dict[str, bool]:
    """Which parts of a snapshot (its manifest from read_manifest) this deployment can read.

    Training state is only of use beside readable weights (an HF checkpoint resumes both).
    """
    weights = _part_format(manifest, "weights") in READABLE_WEIGHTS_FORMATS
    state = _part_format(manifest, "trainingState") in READABLE_TRAINING_STATE_FORMATS
    if manifest.get("layout") not in (1, SNAPSHOT_LAYOUT):
        weights = state = False
    return {"weights": weights, "trainingState": weights and state}


def _part_format(manifest: dict[str, Any], part: str) -> Any:
    """The part's format; None when it has none (or, in a document stored before manifests were
    checked, is not an object)."""
    value = manifest.get(part)
    return value.get("format") if isinstance(value, dict) else None


def check_restore(job: TrainingJob) -> dict[str, Any] | None:
    """The manifest of what `job` restores, once checked that this job can restore it; raises
    ValueError with the user's sentence otherwise (the API refuses such plans first, SPEC 3.3)."""
    from shared import reasons

    if job.restore is None:
        return None
    manifest = read_manifest(job.restore.snapshot_dir)
    parts = readable_parts(manifest)
    if job.restore.what not in (RESTORE_WEIGHTS, RESTORE_TRAINING_STATE):
        raise ValueError(f"restore.what must be {RESTORE_WEIGHTS} or {RESTORE_TRAINING_STATE}, not {job.restore.what}")
    if not parts["weights"]:
        raise ValueError(reasons.WEIGHTS_UNREADABLE)
    if job.restore.what == RESTORE_TRAINING_STATE:
        if not parts["trainingState"]:
            raise ValueError(reasons.TRAINING_STATE_UNREADABLE)
        if int(manifest["gpus"]) != len(job.devices):
            raise ValueError(
                reasons.training_state_gpu_mismatch(saved_gpus=int(manifest["gpus"]), run_gpus=len(job.devices))
            )
    return manifest


def adapter_dir_of(snapshot_dir: Path, manifest: dict[str, Any] | None = None) -> Path:
    """The directory holding the snapshot's adapter_config.json and adapter weights (any layout)."""
    manifest = manifest or read_manifest(snapshot_dir)
    return Path(snapshot_dir) / (manifest.get("weights") or {}).get("path", ADAPTER_DIR)


def checkpoint_from_snapshot(snapshot_dir: Path, target: Path) -> Path:
    """An HF Trainer checkpoint directory (`resume_from_checkpoint`) rebuilt from a snapshot with training state.

    Layout 1 (release 0.5) already is such a checkpoint and is returned as it is (the Trainer only
    reads it). Layout 2 keeps the adapter apart, so its files are copied back beside the training
    state into `target`.
    """
    snapshot_dir = Path(snapshot_dir)
    manifest = read_manifest(snapshot_dir)
    if not readable_parts(manifest)["trainingState"]:
        raise ValueError(f"snapshot {snapshot_dir} holds no training state this deployment reads")
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
