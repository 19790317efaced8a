"""The built-in server's adapters, by the names requests use, over PEFT adapter slots: load spec
adapterMode "unmerged", where any number of adapters and the base model are served side by side
(endpoints; adapter_fold.py is the "folded" mode a rollout server runs in by default).

A reinforcement run whose rollout server serves adapters unmerged hands it a new adapter after
every update and unloads the one before (services/trainer_worker/engines/rollouts.py): the same
configuration with new weights. PEFT's `load_adapter` builds every LoRA module anew each time, which is Python over every layer
(50-90 ms on the benchmark's 19M model, 210 layers), while copying the new weights into the
modules of the adapter just unloaded takes a few milliseconds. So the modules of an unloaded
adapter are kept as one spare slot, and the next adapter whose configuration is the same is copied
into it; any other adapter is loaded by PEFT as before, and the spare is dropped.

A served name and the PEFT adapter (slot) that holds its weights are two names: after a copy,
`policy-7` may be served from slot `policy-6`. Only this module knows the difference.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from shared.models.load_spec import attach_adapter

WEIGHTS_FILE = "adapter_model.safetensors"
CONFIG_FILE = "adapter_config.json"
# Configuration keys that say nothing about the modules or their arithmetic.
_NOT_SHAPE = {"base_model_name_or_path", "revision", "inference_mode", "peft_version", "task_type"}


class AdapterSlots:
    def __init__(self, adapters: dict[str, str]):
        """`adapters`: name -> directory of the adapters already attached, each in a slot of its name."""
        self.paths: dict[str, str] = dict(adapters)
        self.slot_of: dict[str, str] = {name: name for name in adapters}
        self.spare: str | None = None  # a slot whose adapter was unloaded, modules kept
        self.copied = 0  # loads copied into a spare slot instead of built by PEFT

    def load(self, model, name: str, directory: str):
        """Attach the adapter in `directory` as `name`; returns the model (a PeftModel)."""
        spare, self.spare = self.spare, None
        if spare is not None and _copy_into(model, spare, Path(directory)):
            self.slot_of[name] = spare
            self.copied += 1
        else:
            if spare is not None:
                model.delete_adapter(spare)
            slot = self._free_slot_name(name)
            model = attach_adapter(model, slot, directory)
            self.slot_of[name] = slot
        self.paths[name] = directory
        return model

    def unload(self, model, name: str):
        """Forget adapter `name`; its slot becomes the spare. Returns the model: the base model
        again once no adapter is left (a PeftModel without adapters cannot generate)."""
        slot = self.slot_of.pop(name)
        del self.paths[name]
        if not self.paths:
            self.spare = None
            return model.unload()
        if self.spare is not None:
            model.delete_adapter(self.spare)
        self.spare = slot
        return model

    def activate(self, model, name: str) -> None:
        """Make `name`'s slot the one generation uses (PEFT walks every module to switch: only when it changes)."""
        slot = self.slot_of[name]
        if model.active_adapter != slot:
            model.set_adapter(slot)

    def check_servable(self, model_name: str) -> None:
        """Every adapter and the base model can be served at once: nothing to refuse."""

    def serving(self, model, model_name: str):
        """The context a generation for `model_name` runs in: the bare model when no adapter is
        loaded, the adapter's slot active, or the base with every adapter disabled."""
        from contextlib import nullcontext

        if not self.paths:
            return nullcontext()
        if model_name in self.paths:
            self.activate(model, model_name)
            return nullcontext()
        return model.disable_adapter()

    def _free_slot_name(self, name: str) -> str:
        taken = {*self.slot_of.values(), *([self.spare] if self.spare else [])}
        slot, k = name, 1
        while slot in taken:
            slot, k = f"{name}~{k}", k + 1
        return slot


def _shape(config: dict[str, Any]) -> dict[str, Any]:
    shape = {k: v for k, v in config.items() if k not in _NOT_SHAPE}
    for key, value in shape.items():  # sets (PEFT's target_modules) are saved as lists
        if isinstance(value, (set, frozenset, list, tuple)) and all(isinstance(v, str) for v in value):
            shape[key] = sorted(value)
    return shape


def _copy_into(model, slot: str, directory: Path) -> bool:
    """Copy the adapter in `directory` into `slot`'s modules, if it has the slot's configuration
    and exactly its tensors (name for name, shape for shape); False, touching nothing, otherwise."""
    from safetensors.torch import load_file

    try:
        wanted = _shape(json.loads((directory / CONFIG_FILE).read_text()))
    except (OSError, ValueError):
        return False
    if not (directory / WEIGHTS_FILE).is_file() or wanted != _shape(model.peft_config[slot].to_dict()):
        return False
    # PEFT saves a slot's tensors under their parameter names with the adapter name taken out.
    params = {name.replace(f".{slot}", ""): p for name, p in model.named_parameters() if f".{slot}." in name}
    try:
        state = load_file(str(directory / WEIGHTS_FILE))
    except Exception:  # unreadable: PEFT's own load says what is wrong with it
        return False
    if set(state) != set(params) or any(state[k].shape != params[k].shape for k in state):
        return False
    import torch

    with torch.no_grad():
        for key, tensor in state.items():
            params[key].copy_(tensor)
    return True
