"""A LoRA adapter folded into the built-in server's own copy of the base weights (adapterMode "folded").

A reinforcement run's rollout server serves one adapter at a time, the policy of the last update,
and is handed a new one after every update (services/trainer_worker/engines/rollouts.py). Served
unmerged, every linear layer does two extra small matmuls per token (x A^T B^T) beside the base
one; folded, the layer's weight is W0 + scale x B A and generation runs at the speed of a plain
model, while only the adapter's bytes travel (docs/grpo.md measures the three ways).

Exact, however many hand-offs: the base weight W0 of every layer an adapter touches is kept as it
was loaded, and each fold writes W0 + scale x B A computed afresh from it (in fp32, rounded once
to the weight's dtype), never by subtracting the previous adapter's delta (which in bf16 would
drift by a rounding per hand-off). Folding the adapter out copies W0 back bit for bit. The cost is
memory: one more copy of the touched weights, on their device, while an adapter is folded.

The arithmetic is PEFT's LoRA: scale = alpha / r (alpha / sqrt(r) with use_rslora), r and alpha per
module from rank_pattern and alpha_pattern as PEFT matches them, the delta transposed for
fan_in_fan_out layers. An adapter whose configuration asks for anything else (DoRA, LoRA biases,
modules_to_save, tensors other than lora_A and lora_B of a linear layer, a weight shared by two
modules) is refused with the reason, never folded approximately.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared import reasons
from shared.errors import ValidationFailed

WEIGHTS_FILE = "adapter_model.safetensors"
CONFIG_FILE = "adapter_config.json"
SAVED_PREFIX = "base_model.model."  # PEFT saves tensors under the PeftModel's module names
# Configuration keys the fold reads or that change nothing at inference (a description of the file,
# how the adapter was initialised or trained, which modules it holds: its tensors say that).
UNDERSTOOD = {
    "task_type", "peft_type", "auto_mapping", "peft_version", "base_model_name_or_path", "revision",
    "inference_mode", "r", "target_modules", "exclude_modules", "lora_alpha", "lora_dropout", "fan_in_fan_out",
    "bias", "use_rslora", "init_lora_weights", "layers_to_transform", "layers_pattern", "rank_pattern",
    "alpha_pattern", "loftq_config", "eva_config", "corda_config", "lora_ga_config", "megatron_core",
}


def _default(key: str) -> Any:
    """The installed PEFT's default for a LoraConfig key (None where it has no such key)."""
    from peft import LoraConfig

    return LoraConfig().to_dict().get(key)


def _refusal(name: str, why: str) -> ValidationFailed:
    return ValidationFailed(reasons.adapter_not_foldable(name, why), details={"param": "lora_path"})


def _pattern_value(patterns: dict[str, Any], module: str, fallback: Any) -> Any:
    """PEFT's rank_pattern / alpha_pattern lookup: the first key matching the end of the module's name."""
    for key, value in patterns.items():
        if re.match(rf"(.*\.)?({key})$", module):
            return value
    return fallback


def _checked_config(name: str, directory: Path) -> dict[str, Any]:
    try:
        config = json.loads((directory / CONFIG_FILE).read_text())
    except (OSError, ValueError) as exc:
        raise _refusal(name, reasons.fold_file_unreadable(str(directory / CONFIG_FILE), reasons.error_text(exc))) from None
    if config.get("peft_type") != "LORA":
        raise _refusal(name, reasons.fold_not_lora(config.get("peft_type")))
    if config.get("bias", "none") != "none":
        raise _refusal(name, reasons.fold_trains_biases(config["bias"]))
    for key, value in config.items():
        if key not in UNDERSTOOD and value not in (None, False, {}, [], "") and value != _default(key):
            raise _refusal(name, reasons.fold_setting_unknown(key, json.dumps(value)))
    return config


@dataclass(frozen=True)
class ModuleFold:
    """One linear module's part of an adapter: weight += scale x B A (transposed for fan_in_fan_out)."""

    module: str
    lora_a: Any  # (r, in), as saved
    lora_b: Any  # (out, r)
    scale: float
    fan_in_fan_out: bool

    def write(self, weight, base) -> None:
        """weight = base + scale x B A, computed in fp32 on the base's device in one kernel and
        rounded once to the weight's dtype (an fp32 weight is written by the kernel itself)."""
        import torch

        a = self.lora_a.to(base.device, torch.float32)
        b = self.lora_b.to(base.device, torch.float32)
        if self.fan_in_fan_out:  # the layer's weight is (in, out): the delta transposed
            a, b = b.T, a.T
        if weight.dtype == torch.float32:
            torch.addmm(base, b, a, alpha=self.scale, out=weight)
        else:
            weight.copy_(torch.addmm(base.to(torch.float32), b, a, alpha=self.scale))


def adapter_folds(name: str, directory: Path | str, model) -> list[ModuleFold]:
    """What folding the adapter in `directory` into `model` writes, module by module, checked
    before any weight changes: every tensor a lora_A/lora_B pair of a linear module of the model
    whose weight no other module shares, of the rank its configuration says."""
    import torch
    from safetensors.torch import load_file

    directory = Path(directory)
    config = _checked_config(name, directory)
    try:
        tensors = load_file(str(directory / WEIGHTS_FILE))
    except Exception as exc:  # a missing or damaged file: the caller's input, named
        raise _refusal(name, reasons.fold_file_unreadable(str(directory / WEIGHTS_FILE), reasons.error_text(exc))) from None
    pairs: dict[str, dict[str, Any]] = {}
    for key, tensor in tensors.items():
        match = re.fullmatch(r"(.+)\.(lora_A|lora_B)\.weight", key)
        if not match or not match.group(1).startswith(SAVED_PREFIX):
            raise _refusal(name, reasons.fold_not_a_lora_matrix(key))
        pairs.setdefault(match.group(1)[len(SAVED_PREFIX):], {})[match.group(2)] = tensor
    shared_weights = _shared_weights(model)
    fan_in_fan_out = bool(config.get("fan_in_fan_out"))
    folds = []
    for module_name, pair in pairs.items():
        if set(pair) != {"lora_A", "lora_B"}:
            raise _refusal(name, reasons.fold_half_pair(module_name, list(pair)))
        try:
            module = model.get_submodule(module_name)
        except AttributeError:
            raise _refusal(name, reasons.fold_module_missing(module_name)) from None
        weight = getattr(module, "weight", None)
        if not isinstance(module, torch.nn.Linear) and not fan_in_fan_out:
            raise _refusal(name, reasons.fold_not_linear(module_name, type(module).__name__))
        if weight is None or weight.dim() != 2 or id(weight) in shared_weights:
            raise _refusal(name, reasons.fold_weight_shared(module_name))
        a, b = pair["lora_A"], pair["lora_B"]
        rank = _pattern_value(config.get("rank_pattern") or {}, module_name, config["r"])
        alpha = _pattern_value(config.get("alpha_pattern") or {}, module_name, config["lora_alpha"])
        if a.dim() != 2 or b.dim() != 2 or a.shape[0] != rank or b.shape[1] != rank:
            raise _refusal(name, reasons.fold_rank_mismatch(module_name, a.shape[0], rank))
        delta_shape = (b.shape[0], a.shape[1]) if not fan_in_fan_out else (a.shape[1], b.shape[0])
        if tuple(weight.shape) != delta_shape:
            raise _refusal(name, reasons.fold_shape_mismatch(module_name, tuple(weight.shape), delta_shape))
        scale = alpha / math.sqrt(rank) if config.get("use_rslora") else alpha / rank
        folds.append(ModuleFold(module_name, a, b, float(scale), fan_in_fan_out))
    if not folds:
        raise _refusal(name, reasons.FOLD_NO_MATRICES)
    return folds


def _shared_weights(model) -> set[int]:
    """Parameters that more than one module holds (tied embeddings and head): folding into one would fold into both."""
    seen: dict[int, int] = {}
    for _, parameter in model.named_parameters(remove_duplicate=False):
        seen[id(parameter)] = seen.get(id(parameter), 0) + 1
    return {key for key, count in seen.items() if count > 1}


class FoldedAdapter:
    """At most one adapter, folded into the model's weights, by the name requests use.

    The same faces as AdapterSlots (`paths`, `load`, `unload`, `serving`), so the Generator does
    not ask which one it holds. `load` of a new name while one is folded replaces it: the new
    weights are written over the old in one pass (a rollout server's hand-off), and the old name is
    no longer served."""

    def __init__(self):
        self.paths: dict[str, str] = {}
        self.originals: dict[str, Any] = {}  # module name -> its base weight as loaded

    @property
    def folded(self) -> str | None:
        return next(iter(self.paths), None)

    def load(self, model, name: str, directory: str):
        """Fold the adapter in `directory` as `name` (in place of the one folded, if any); returns the model."""
        import torch

        folds = adapter_folds(name, directory, model)  # all checked before any weight changes
        touched = {fold.module for fold in folds}
        try:
            with torch.no_grad():
                for module_name in [m for m in self.originals if m not in touched]:  # the old adapter's alone
                    model.get_submodule(module_name).weight.copy_(self.originals.pop(module_name))
                for fold in folds:
                    weight = model.get_submodule(fold.module).weight
                    base = self.originals.setdefault(fold.module, weight.detach().clone())
                    fold.write(weight, base)  # from the base weight as loaded, never from the previous fold
        except BaseException:  # out of memory half-way: never serve half of two adapters as one
            self.unload(model, name)
            raise
        self.paths = {name: directory}
        return model

    def unload(self, model, name: str):
        """Fold the adapter out: every weight it touched back to the base weight, bit for bit."""
        import torch

        with torch.no_grad():
            for module_name, base in self.originals.items():
                model.get_submodule(module_name).weight.copy_(base)
        self.originals.clear()
        self.paths = {}
        return model

    def check_servable(self, model_name: str) -> None:
        """A request for the base model while an adapter is folded in cannot be answered: refused."""
        if self.folded is not None and model_name != self.folded:
            raise ValidationFailed(reasons.folded_server_serves_only(self.folded, model_name),
                                   details={"param": "model"})

    def serving(self, model, model_name: str):
        """The context a generation for `model_name` runs in: the model as it is."""
        from contextlib import nullcontext

        self.check_servable(model_name)
        return nullcontext()
