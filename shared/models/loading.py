"""Loading a catalog model: where it lives on disk, and the one way every engine and server loads it.

A catalog entry names its model one of three ways:
    builtin: NAME   a built-in tiny model, built offline on first use (shared.models.tiny_models)
    path: DIR       a local directory, for example a Qwen3-8B checkout
    (neither)       its id is a Hugging Face repo id found in the local hub cache, at the entry's
                    `revision` (a branch, tag or commit; "main" when absent)
and a model `training base-models import` added names its directory in the artifact store:
    artifact: KEY   (services/api/model_import.py; kept in Redis, not in the config)
All three go through the same `load_causal_lm` / `load_tokenizer`, always with
`local_files_only=True`: nothing is ever downloaded at run time.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from shared import reasons
from shared.errors import ValidationFailed
from shared.models.tiny_models import ensure_builtin
from shared.store.artifacts import ArtifactRoot

# Plan precision -> the dtype the base weights are loaded in.
PRECISION_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
DEFAULT_HUB_REVISION = "main"


def is_hub_entry(entry: dict[str, Any]) -> bool:
    """A catalog entry with neither `builtin` nor `path` loads from the local Hugging Face hub cache."""
    return not entry.get("builtin") and not entry.get("path") and not entry.get("artifact")


def hub_cache_dir(env: dict[str, str] | None = None) -> Path:
    """The local Hugging Face hub cache, by huggingface_hub's own rules: HF_HUB_CACHE, else the
    older HUGGINGFACE_HUB_CACHE, else HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
    ~/.cache/huggingface/hub. Read on every call, not once at import as huggingface_hub.constants
    does, so a service (or a test) that sets the variable later is honoured."""
    env = os.environ if env is None else env
    cache = env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE")
    if not cache:
        home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
        cache = os.path.join(home, "hub")
    return Path(os.path.expandvars(cache)).expanduser()


def hub_snapshot_dir(entry: dict[str, Any]) -> Path:
    """The hub-cache snapshot directory of a catalog entry with neither `builtin` nor `path`,
    found offline (`local_files_only`): the entry's id is the repo id, its `revision` (default
    "main") is resolved through the cache's refs/. Raises ValidationFailed naming the model, the
    cache looked in and the command that puts it there."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    model_id = entry["id"]
    revision = str(entry.get("revision") or DEFAULT_HUB_REVISION)
    cache_dir = hub_cache_dir()
    details = {"field": "model", "model": model_id, "revision": revision, "cacheDir": str(cache_dir)}
    try:
        folder = snapshot_download(model_id, revision=revision, cache_dir=str(cache_dir), local_files_only=True)
    except HFValidationError:
        raise ValidationFailed(reasons.hub_model_id_invalid(model_id), details=details) from None
    except LocalEntryNotFoundError:  # absent, or partly downloaded (IncompleteSnapshotError)
        raise ValidationFailed(
            reasons.hub_model_not_cached(model=model_id, revision=revision, cache_dir=str(cache_dir)),
            details=details,
        ) from None
    return Path(folder)


def model_dir_for(entry: dict[str, Any], artifacts: ArtifactRoot) -> Path:
    """The directory holding a catalog entry's config, weights and tokenizer (built-ins are built on
    demand; a hub-cache entry's is its snapshot directory, never downloaded)."""
    if entry.get("builtin"):
        return ensure_builtin(entry["builtin"], artifacts)
    if entry.get("artifact"):
        return artifacts.get_dir(entry["artifact"])
    model_id = entry.get("id", "?")
    directory = hub_snapshot_dir(entry) if is_hub_entry(entry) else Path(entry["path"]).expanduser()
    if not (directory / "config.json").is_file():
        raise ValidationFailed(
            reasons.model_dir_without_config(model_id, str(directory)),
            details={"model": model_id, "path": str(directory)},
        )
    return directory


def torch_dtype(precision: str):
    import torch

    try:
        return getattr(torch, PRECISION_DTYPES[precision])
    except KeyError:
        raise ValidationFailed(
            reasons.precision_unknown(precision, list(PRECISION_DTYPES)),
            details={"field": "precision"},
        ) from None


def load_causal_lm(model_dir: Path | str, precision: str, device: str = "cpu"):
    """Load a causal LM's base weights in the plan's precision, on `device` ("cpu", "cuda:0", ...)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        str(model_dir), dtype=torch_dtype(precision), local_files_only=True
    )
    return model.to(device)


def load_tokenizer(model_dir: Path | str):
    """Load the model's tokenizer; a tokenizer without a pad token pads with its eos token."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_processor(model_dir: Path | str):
    """Load an image-text model's processor (its tokenizer and image processor, from the model's own
    files): what turns chat messages with image parts into model inputs. The tokenizer inside it
    pads like `load_tokenizer`'s."""
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(str(model_dir), local_files_only=True)
    if processor.tokenizer.pad_token is None:
        processor.tokenizer.pad_token = processor.tokenizer.eos_token
    return processor
