"""The shared model-load spec (SPEC 6, "Same load everywhere").

An endpoint and an evaluation over the same model load it from one `LoadSpec`: the same data type,
the same default generation config and the same batch-invariant mode, wherever they run. Only the
sampling settings (temperature, top_p, max_tokens, stop, seed) come from each request.

The spec travels as camelCase JSON (a file beside the serving process, a field of a task), and
`load_model` turns it into a model and tokenizer through the one loading path (`shared.models`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shared import reasons
from shared.artifacts import ArtifactRoot
from shared.errors import ValidationFailed
from shared.models import PRECISION_DTYPES, load_causal_lm, load_tokenizer, model_dir_for

DEVICES = ("cpu", "cuda")
# How the built-in server applies an adapter (vLLM applies its own LoRA kernels and reads neither):
# "unmerged": PEFT LoRA layers beside the base weights, any number of adapters and the base served
# at once (endpoints, evaluations); "folded": one adapter at a time folded into the server's copy
# of the base weights, generation at a plain model's speed (a rollout server: shared/serving/adapter_fold.py).
ADAPTER_MODES = ("unmerged", "folded")
# Keys of a generation_config.json that describe the file, not generation.
_NOT_GENERATION = {"transformers_version"}
# How long an answer may run when neither the request (`max_tokens`) nor the model (`max_new_tokens`
# of its generation config, or of its catalog entry's `generationConfig`, which a deployment sets per
# model) says: the rest of the model's context, up to this many tokens. vLLM's own default is the rest
# of the context alone; the cap bounds how long one request holds a built-in server, which answers
# one request at a time, while leaving room for any ordinary chat answer (OpenAI's legacy default of
# 16 tokens cut answers mid-sentence). docs/endpoints.md, "How long an answer may run".
DEFAULT_MAX_TOKENS = 1024


@dataclass(frozen=True)
class LoadSpec:
    model: str  # catalog id, e.g. "builtin/tiny-qwen3" or "Qwen/Qwen3-8B"
    model_dir: str  # local directory of the base model (config, weights, tokenizer)
    dtype: str  # "fp32" | "bf16" | "fp16": the data type of the base weights
    generation_config: dict[str, Any]  # the model's default generation config (its file, then the catalog's)
    # True: generate one request at a time with deterministic kernels, so a prompt's greedy output does
    # not depend on what else is being served at the same moment.
    batch_invariant: bool
    served_model_name: str  # the name the server answers to for the base model
    adapters: dict[str, str] = field(default_factory=dict)  # adapter name -> PEFT adapter directory, loaded at start
    device: str = "cpu"  # "cpu" or "cuda" (the first visible GPU)
    adapter_mode: str = "unmerged"  # ADAPTER_MODES: how the built-in server applies adapters

    def __post_init__(self):
        if self.dtype not in PRECISION_DTYPES:
            raise ValidationFailed(
                reasons.load_spec_value_refused("dtype", self.dtype, list(PRECISION_DTYPES)),
                details={"field": "dtype"},
            )
        if self.device not in DEVICES:
            raise ValidationFailed(
                reasons.load_spec_value_refused("device", self.device, list(DEVICES)), details={"field": "device"}
            )
        if self.adapter_mode not in ADAPTER_MODES:
            raise ValidationFailed(
                reasons.load_spec_value_refused("adapterMode", self.adapter_mode, list(ADAPTER_MODES)),
                details={"field": "adapterMode"},
            )
        if self.adapter_mode == "folded" and len(self.adapters) > 1:
            raise ValidationFailed(reasons.folded_spec_adapters(len(self.adapters)), details={"field": "adapters"})
        if self.served_model_name in self.adapters:
            raise ValidationFailed(
                reasons.load_spec_adapter_is_base(self.served_model_name),
                details={"field": "adapters"},
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "modelDir": self.model_dir,
            "dtype": self.dtype,
            "generationConfig": dict(self.generation_config),
            "batchInvariant": self.batch_invariant,
            "servedModelName": self.served_model_name,
            "adapters": dict(self.adapters),
            "device": self.device,
            "adapterMode": self.adapter_mode,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LoadSpec:
        try:
            return cls(
                model=data["model"],
                model_dir=data["modelDir"],
                dtype=data["dtype"],
                generation_config=dict(data.get("generationConfig") or {}),
                batch_invariant=bool(data.get("batchInvariant", True)),
                served_model_name=data["servedModelName"],
                adapters=dict(data.get("adapters") or {}),
                device=data.get("device", "cpu"),
                adapter_mode=data.get("adapterMode", "unmerged"),
            )
        except KeyError as exc:
            raise ValidationFailed(reasons.load_spec_field_missing(exc.args[0]), details={"field": exc.args[0]}) from None

    def write(self, path: Path | str) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")
        return path

    @classmethod
    def read(cls, path: Path | str) -> LoadSpec:
        try:
            return cls.from_dict(json.loads(Path(path).read_text()))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValidationFailed(reasons.load_spec_unreadable(str(path), reasons.error_text(exc)),
                                   details={"path": str(path)}) from None


def _supported_precisions(entry: dict[str, Any], artifacts: ArtifactRoot) -> list[str]:
    if entry.get("builtin"):
        from shared.tiny_models import builtin_facts

        return list(builtin_facts(entry["builtin"])["precisions"])
    from shared.catalog import REAL_ENTRY_DEFAULTS

    return list(entry.get("precisions") or REAL_ENTRY_DEFAULTS["precisions"])


def default_dtype(precisions: list[str], device: str) -> str:
    """fp32 on a CPU; on a GPU bf16 where the model supports it, else fp16, else fp32."""
    if device == "cuda":
        for candidate in ("bf16", "fp16"):
            if candidate in precisions:
                return candidate
    return "fp32"


def model_generation_config(model_dir: Path, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The model's generation_config.json (if any), with the catalog entry's generationConfig over it."""
    path = Path(model_dir) / "generation_config.json"
    config = json.loads(path.read_text()) if path.is_file() else {}
    config.update(overrides or {})
    return {k: v for k, v in config.items() if k not in _NOT_GENERATION and not k.startswith("_")}


def load_spec_for(
    *,
    entry: dict[str, Any],
    artifacts: ArtifactRoot,
    precision: str | None = None,
    adapters: dict[str, str] | None = None,
    served_model_name: str,
    device: str = "cpu",
    batch_invariant: bool = True,
) -> LoadSpec:
    """The load spec of a catalog entry (its raw config entry, `builtin:` or `path:`) on `device`."""
    model_dir = model_dir_for(entry, artifacts)
    precisions = _supported_precisions(entry, artifacts)
    dtype = precision or default_dtype(precisions, device)
    if dtype not in precisions:
        raise ValidationFailed(
            reasons.load_spec_precision_unsupported(entry.get("id"), dtype, list(precisions)),
            details={"field": "precision", "model": entry.get("id")},
        )
    return LoadSpec(
        model=entry["id"],
        model_dir=str(model_dir),
        dtype=dtype,
        generation_config=model_generation_config(model_dir, entry.get("generationConfig")),
        batch_invariant=batch_invariant,
        served_model_name=served_model_name,
        adapters=dict(adapters or {}),
        device=device,
    )


def sampling_defaults(generation_config: dict[str, Any]) -> dict[str, Any]:
    """What a request that names no sampling settings gets: the model's defaults, in OpenAI terms.

    A model whose config does not sample (`do_sample` false or absent, as in transformers) is greedy
    by default: temperature 0. Both serving backends start from these (vLLM via its overrides).
    """
    samples = bool(generation_config.get("do_sample", False))
    return {
        "temperature": float(generation_config.get("temperature", 1.0)) if samples else 0.0,
        "top_p": float(generation_config.get("top_p", 1.0)),
        "top_k": int(generation_config.get("top_k") or 0),  # 0: no top-k filter
        "repetition_penalty": float(generation_config.get("repetition_penalty", 1.0)),
        "max_tokens": int(generation_config.get("max_new_tokens") or DEFAULT_MAX_TOKENS),
    }


def default_max_tokens(default: int, *, max_context: int | None, prompt_tokens: int) -> int:
    """What a request that names no max_tokens may generate, as vLLM's `get_max_tokens` computes it:
    the model's default (`sampling_defaults`), within the rest of the context after the prompt (at
    least 1: a prompt that fills the context is then refused by the length check, naming it)."""
    if not max_context:
        return default
    return max(1, min(default, max_context - prompt_tokens))


def config_max_context(config: Any) -> int | None:
    """The longest sequence a model reads (prompt and answer), from its config (an object or a
    config.json dict): `max_position_embeddings`, or its text model's for an image-text model."""
    def read(holder: Any, name: str) -> Any:
        return holder.get(name) if isinstance(holder, dict) else getattr(holder, name, None)

    for holder in (config, read(config, "text_config")):
        value = read(holder, "max_position_embeddings") if holder is not None else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def model_max_context(model_dir: Path | str) -> int | None:
    """`config_max_context` of the config.json in `model_dir`; None when it cannot be read there."""
    try:
        return config_max_context(json.loads((Path(model_dir) / "config.json").read_text()))
    except (OSError, ValueError):
        return None


def generation_defaults(generation_config: dict[str, Any], max_context: int | None) -> dict[str, Any]:
    """What a request that names no sampling settings gets from a model, as the catalog shows it
    (`base-models get`): the sampling defaults in camelCase, where the max_tokens default comes from
    (`model`: its max_new_tokens; `deployment`: DEFAULT_MAX_TOKENS) and the context it is cut to."""
    defaults = sampling_defaults(generation_config)
    return {
        "temperature": defaults["temperature"],
        "topP": defaults["top_p"],
        "topK": defaults["top_k"],
        "repetitionPenalty": defaults["repetition_penalty"],
        "maxTokens": defaults["max_tokens"],
        "maxTokensFrom": "model" if generation_config.get("max_new_tokens") else "deployment",
        "maxContext": max_context,
    }


def enable_batch_invariance() -> None:
    """Deterministic kernels for this process (on CUDA the launcher also sets CUBLAS_WORKSPACE_CONFIG)."""
    import torch

    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
    if hasattr(torch.backends, "cuda"):
        torch.backends.cuda.matmul.allow_tf32 = False


def load_model(spec: LoadSpec):
    """(model, tokenizer) as the spec says: base weights in its dtype on its device, its generation
    config, and, in adapterMode unmerged, its adapters attached through PEFT (the first one active).
    In adapterMode folded the base model alone: the Generator folds the spec's adapter in, keeping
    the base weights it replaces (shared/serving/adapter_fold.py)."""
    from transformers import GenerationConfig

    if spec.batch_invariant:
        enable_batch_invariance()
    tokenizer = load_tokenizer(spec.model_dir)
    model = load_causal_lm(spec.model_dir, spec.dtype, device=spec.device)
    merged = {**model.generation_config.to_diff_dict(), **spec.generation_config}
    model.generation_config = GenerationConfig.from_dict(
        {k: v for k, v in merged.items() if k not in _NOT_GENERATION}
    )
    unmerged = spec.adapters if spec.adapter_mode == "unmerged" else {}
    for i, (name, directory) in enumerate(unmerged.items()):
        model = attach_adapter(model, name, directory, first=i == 0)
    if unmerged:
        model.set_adapter(next(iter(unmerged)))
    model.eval()
    return model, tokenizer


def attach_adapter(model, name: str, directory: str | Path, *, first: bool | None = None):
    """Load a PEFT adapter under `name`; the first one wraps the base model in a PeftModel."""
    from peft import PeftModel

    if not (Path(directory) / "adapter_config.json").is_file():
        raise ValidationFailed(
            reasons.adapter_without_config(name, str(directory)), details={"adapter": name, "path": str(directory)}
        )
    if first if first is not None else not isinstance(model, PeftModel):
        return PeftModel.from_pretrained(model, str(directory), adapter_name=name, is_trainable=False)
    model.load_adapter(str(directory), adapter_name=name, is_trainable=False)
    return model
