"""The model-load spec: where a catalog model lives on disk, and the one way every engine loads it.

Built-in tiny models and real catalog entries (a local path, for example a Qwen3-8B checkout or a
hub-cache snapshot directory) go through the same `load_causal_lm` / `load_tokenizer`, always with
`local_files_only=True`: nothing is ever downloaded at run time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shared.artifacts import ArtifactRoot
from shared.errors import ValidationFailed
from shared.tiny_models import ensure_builtin

# Plan precision -> the dtype the base weights are loaded in.
PRECISION_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def model_dir_for(entry: dict[str, Any], artifacts: ArtifactRoot) -> Path:
    """The directory holding a catalog entry's config, weights and tokenizer (built-ins are built on demand)."""
    if entry.get("builtin"):
        return ensure_builtin(entry["builtin"], artifacts)
    model_id = entry.get("id", "?")
    path = entry.get("path")
    if not path:
        raise ValidationFailed(
            f"catalog entry {model_id} names neither a built-in model nor a local path",
            details={"model": model_id},
        )
    directory = Path(path).expanduser()
    if not (directory / "config.json").is_file():
        raise ValidationFailed(
            f"catalog entry {model_id} points at {directory}, which holds no config.json",
            details={"model": model_id, "path": str(directory)},
        )
    return directory


def torch_dtype(precision: str):
    import torch

    try:
        return getattr(torch, PRECISION_DTYPES[precision])
    except KeyError:
        raise ValidationFailed(
            f"precision {precision} is not one of {', '.join(PRECISION_DTYPES)}",
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
