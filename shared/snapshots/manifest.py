"""The snapshot format (SPEC 2.4, 3.3): the manifest, the layouts, and which parts of a snapshot
this deployment reads. Plain Python, no torch: the API registers imported snapshots and refuses
branches with it, the worker's engines write and restore snapshots with it.

A layout-2 snapshot directory:

    snapshot.json       the manifest (`manifest`)
    adapter/            adapter_config.json + adapter_model.safetensors (PEFT, loadable as is)
    training_state/     the Hugging Face Trainer checkpoint minus the adapter: optimizer.pt,
                        scheduler.pt, rng_state*.pth, trainer_state.json, training_args.bin, ...
                        (format "hf-trainer"); for a sharded engine (sft-fsdp) the adapter's and
                        the optimizer's shards as torch.distributed.checkpoint directories
                        (pytorch_model_fsdp_0/, optimizer_0/: format "hf-trainer-fsdp2-dcp")

A layout-1 directory (release 0.5) is an HF Trainer checkpoint of a PEFT model saved on one GPU,
adapter files included, plus a snapshot.json without parts; `read_manifest` describes its parts.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from shared import reasons
from shared.config.version import VERSION
from shared.errors import ValidationFailed
from shared.schemas import json_values

SNAPSHOT_LAYOUT = 2
MANIFEST_FILE = "snapshot.json"
ADAPTER_DIR = "adapter"
TRAINING_STATE_DIR = "training_state"
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
WEIGHTS_FORMAT = "peft-safetensors"
TRAINING_STATE_FORMAT = "hf-trainer"
# An HF Trainer checkpoint of an FSDP2 run: scheduler, RNG of every rank and trainer state as in
# "hf-trainer", the adapter's and optimizer's shards as torch.distributed.checkpoint (DCP) directories
# (pytorch_model_fsdp_0/, optimizer_0/; a .metadata file and one __R_0.distcp file per rank each).
SHARDED_TRAINING_STATE_FORMAT = "hf-trainer-fsdp2-dcp"


def manifest(*, run_id: str | None, step: int, method: str, engine: str | None, precision: str, model: str | None,
             gpus: int, training_state_format: str | None = TRAINING_STATE_FORMAT,
             files: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The manifest of a layout-2 snapshot this release writes; `files`: every file of the directory
    but the manifest with its size and sha256 (shared/snapshot_files.record), which an import of the
    directory elsewhere is held to."""
    document = {
        "layout": SNAPSHOT_LAYOUT,
        "run": run_id,
        "step": step,
        "method": method,
        "engine": engine,
        "precision": precision,
        "model": model,
        "gpus": gpus,
        "release": VERSION,
        "weights": {"format": WEIGHTS_FORMAT, "path": ADAPTER_DIR},
        "trainingState": (
            {"format": training_state_format, "path": TRAINING_STATE_DIR} if training_state_format else None
        ),
    }
    return {**document, "files": files} if files is not None else document


def write_manifest(directory: Path, document: dict[str, Any]) -> None:
    (Path(directory) / MANIFEST_FILE).write_text(json.dumps(document, indent=2) + "\n")


# --- Reading snapshot directories of any layout

MANIFEST_KEYS = ("layout", "model", "method", "step", "gpus", "precision")
LAYOUT1_ADAPTER_FILES = ("adapter_model.safetensors", "adapter_model.bin")  # either one, in this preference
LAYOUT1_STATE_FILES = ("optimizer.pt", "scheduler.pt", "trainer_state.json")
# The formats this deployment reads. A DeepSpeed-sharded state ("deepspeed-zero3") is not among
# them: no engine here restores one, with or without DeepSpeed installed.
READABLE_WEIGHTS_FORMATS = frozenset({"peft-safetensors", "peft-bin"})
READABLE_TRAINING_STATE_FORMATS = frozenset({TRAINING_STATE_FORMAT, SHARDED_TRAINING_STATE_FORMAT})


# A manifest listing 10,000 files (the most an import takes) with their sha256 is about 1.5 MB.
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
MAX_MANIFEST_TEXT = 256  # characters of a text field (model, method, precision, engine, run, a part's format)


def read_manifest(snapshot_dir: Path) -> dict[str, Any]:
    """The snapshot's manifest, validated. Raises ValidationFailed naming what is wrong, and the file
    by its name in the snapshot directory, never by where the directory lies on this machine.

    A layout-1 manifest lists no parts; they are described here from the files the directory holds
    (an HF Trainer checkpoint: `weights` in PEFT .safetensors or .bin, `trainingState` hf-trainer),
    with `path` ".", so every caller reads parts the same way whatever the layout.
    """
    snapshot_dir = Path(snapshot_dir)
    try:
        with open(snapshot_dir / MANIFEST_FILE, "rb") as f:
            data = f.read(MAX_MANIFEST_BYTES + 1)
    except FileNotFoundError:
        raise ValidationFailed(reasons.snapshot_dir_without_manifest(MANIFEST_FILE),
                               details={"file": MANIFEST_FILE}) from None
    except OSError as exc:
        raise ValidationFailed(reasons.manifest_unreadable(MANIFEST_FILE, exc.strerror),
                               details={"file": MANIFEST_FILE}) from None
    manifest = parse_manifest(data)
    if manifest["layout"] == 1:  # its parts come from its files, whatever it says of them
        manifest = {**manifest, **_layout1_parts(snapshot_dir)}
    return manifest


def parse_manifest(data: bytes) -> dict[str, Any]:
    """The manifest in `data` (the bytes of a snapshot.json), its fields checked; a layout-1
    manifest's parts are left for read_manifest to describe from its files. JSON is read with the
    bounds of request bodies (shared/json_values: nesting, lone surrogates, numbers), so a hostile
    manifest is a 400 naming its field, not a RecursionError or a string no reader can print."""
    details = {"file": MANIFEST_FILE}
    if len(data) > MAX_MANIFEST_BYTES:
        raise ValidationFailed(reasons.manifest_too_large(MAX_MANIFEST_BYTES),
                               details={**details, "maxBytes": MAX_MANIFEST_BYTES})
    try:
        manifest = json_values.loads(data)
    except json_values.JsonRefused as exc:
        raise ValidationFailed(reasons.manifest_refused(exc.field, exc.problem),
                               details={**details, "manifestField": exc.field}) from None
    except ValueError as exc:  # not JSON (UnicodeDecodeError included)
        raise ValidationFailed(reasons.manifest_not_json(MANIFEST_FILE, reasons.error_text(exc)), details=details) from None
    if not isinstance(manifest, dict):
        raise ValidationFailed(reasons.manifest_not_an_object(MANIFEST_FILE), details=details)
    missing = [k for k in MANIFEST_KEYS if k not in manifest]
    if missing:
        raise ValidationFailed(reasons.manifest_lacks(MANIFEST_FILE, missing), details={**details, "missing": missing})
    if manifest["layout"] == 1:
        manifest = {k: v for k, v in manifest.items() if k not in ("weights", "trainingState")}
    _check_manifest_fields(manifest)
    return manifest


def _whole(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _text(value: Any) -> bool:
    """A non-empty string a terminal prints as it is: no control characters, not too long."""
    return isinstance(value, str) and 0 < len(value) <= MAX_MANIFEST_TEXT and value.isprintable()


def _inside(value: Any) -> bool:
    """A path relative to the snapshot directory that stays inside it ("." is the directory itself)."""
    if not isinstance(value, str) or not value or not value.isprintable():
        return False
    parts = PurePosixPath(value.replace("\\", "/"))
    return not parts.is_absolute() and not PureWindowsPath(value).drive and ".." not in parts.parts


_TEXT = f"a non-empty string of printable text (at most {MAX_MANIFEST_TEXT} characters)"
# field -> (what it must be, the test); optional fields may also be absent
_MANIFEST_FIELDS: dict[str, tuple[str, Any]] = {
    "layout": ("a whole number of at least 1", lambda v: _whole(v, 1)),
    "step": ("a whole number of 0 or more", lambda v: _whole(v, 0)),
    "gpus": ("a whole number of at least 1", lambda v: _whole(v, 1)),
    "model": (_TEXT, _text),
    "method": (_TEXT, _text),
    "precision": (_TEXT, _text),
    "engine": (f"{_TEXT} or null", lambda v: v is None or _text(v)),
    "run": (f"{_TEXT} or null", lambda v: v is None or _text(v)),
    "weights": ("a JSON object or null", lambda v: v is None or isinstance(v, dict)),
    "trainingState": ("a JSON object or null", lambda v: v is None or isinstance(v, dict)),
    "files": ("a JSON object of {bytes, sha256} per file", lambda v: v is None or (isinstance(v, dict) and all(
        isinstance(r, dict) and _whole(r.get("bytes"), 0) and isinstance(r.get("sha256"), str) and _inside(k)
        for k, r in v.items()))),
}
_PART_FIELDS: dict[str, tuple[str, Any]] = {
    "format": (_TEXT, _text),
    "path": ("a relative path inside the snapshot directory", _inside),
}


def _check_manifest_fields(manifest: dict[str, Any]) -> None:
    """Every field a reader of the manifest uses has the type it needs (a 400 naming the first that
    does not), so nothing downstream meets a string where it wants an object."""
    def refuse(name: str, must: str, value: Any) -> None:
        raise ValidationFailed(reasons.manifest_field_invalid(MANIFEST_FILE, name, must, value),
                               details={"file": MANIFEST_FILE, "manifestField": name})

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


def adapter_dir_of(snapshot_dir: Path, manifest: dict[str, Any] | None = None) -> Path:
    """The directory holding the snapshot's adapter_config.json and adapter weights (any layout)."""
    manifest = manifest or read_manifest(snapshot_dir)
    return Path(snapshot_dir) / (manifest.get("weights") or {}).get("path", ADAPTER_DIR)


ADAPTER_CONFIG_FILE = "adapter_config.json"
MAX_ADAPTER_CONFIG_BYTES = 1024 * 1024  # PEFT's config of one adapter: a few KB


def check_adapter_config(snapshot_dir: Path, manifest: dict[str, Any]) -> None:
    """An imported snapshot's adapter_config.json, when it has one, is a JSON object read with the
    bounds of a manifest: PEFT, the worker and the serving processes read it with plain json, where
    a config nested 200,000 deep would be a RecursionError. ValidationFailed naming the file."""
    weights = manifest.get("weights")
    if not isinstance(weights, dict):
        return
    directory = adapter_dir_of(snapshot_dir, manifest)
    name = (PurePosixPath(str(weights.get("path", ADAPTER_DIR))) / ADAPTER_CONFIG_FILE).as_posix()
    path = directory / ADAPTER_CONFIG_FILE
    if not path.is_file():
        return  # a missing file is damage, named by shared/snapshot_files
    details = {"file": name}
    with open(path, "rb") as f:
        data = f.read(MAX_ADAPTER_CONFIG_BYTES + 1)
    problem = None
    if len(data) > MAX_ADAPTER_CONFIG_BYTES:
        problem = f"is larger than {MAX_ADAPTER_CONFIG_BYTES} bytes"
    else:
        try:
            config = json_values.loads(data)
        except json_values.JsonRefused as exc:
            problem = exc.problem if exc.field is None else f"has {exc.field}, which {exc.problem}"
        except ValueError as exc:
            problem = f"is not JSON ({exc})"
        else:
            problem = None if isinstance(config, dict) else "is not a JSON object"
    if problem is not None:
        raise ValidationFailed(reasons.adapter_config_refused(name, problem), details=details)
