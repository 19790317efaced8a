"""The base-model catalog (SPEC 2.1): entries from the deployment config, with their facts.

A built-in entry (`builtin: NAME`) has facts that follow from its spec (shared.tiny_models; the
model itself is built offline where it is first loaded, never by the API); a real entry declares its facts in the config and loads through the
same loading code (shared.models) from a local directory (`path: DIR`) or, with neither, from the
local Hugging Face hub cache (its id is the repo id, `revision` optional), never downloading.
"""

from __future__ import annotations

from typing import Any

from shared import reasons
from shared.artifacts import ArtifactRoot
from shared.config import DeploymentConfig
from shared.errors import NotFound

REAL_ENTRY_DEFAULTS = {
    "modality": "text",
    "precisions": ["bf16", "fp32"],
    "gpuCounts": [1],
    "generationConfig": {},
    "loraTargetModules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    "parameters": None,
}


class Catalog:
    def __init__(self, config: DeploymentConfig, artifacts: ArtifactRoot):
        self.config = config
        self.artifacts = artifacts

    def ids(self) -> list[str]:
        return [entry["id"] for entry in self.config.catalog]

    def raw(self, model_id: str) -> dict[str, Any]:
        for entry in self.config.catalog:
            if entry["id"] == model_id:
                return entry
        raise NotFound(
            reasons.model_not_in_catalog(model_id),
            details={"model": model_id, "catalog": self.ids()},
        )

    def check_loadable(self, model_id: str) -> dict[str, Any]:
        """The raw entry of a model a new run, evaluation or endpoint names: NotFound (404) when it is
        not in the catalog, ValidationFailed (400) when a hub-cache entry's snapshot is not in the
        hub cache, so the user hears it now and not after the work was granted GPUs.

        This looks in the hub cache of the API's machine: the deployment is assumed to give every
        service the same cache (HF_HUB_CACHE on a volume shared like the artifact root). Looking is
        cheap (a refs/ file and a directory). The worker looks again when it loads the model
        (shared.models.model_dir_for), with the same sentence, for a node whose cache differs.
        A `path:` entry is not checked here: a model directory may be local to the GPU nodes."""
        from shared.models import hub_snapshot_dir, is_hub_entry

        entry = self.raw(model_id)
        if is_hub_entry(entry):
            hub_snapshot_dir(entry)
        return entry

    def get(self, model_id: str) -> dict[str, Any]:
        return self.describe(self.raw(model_id))

    def list(self) -> list[dict[str, Any]]:
        return [self.describe(entry) for entry in self.config.catalog]

    def describe(self, entry: dict[str, Any]) -> dict[str, Any]:
        from shared.load_spec import generation_defaults

        if entry.get("builtin"):
            from shared.tiny_models import builtin_facts

            facts = builtin_facts(entry["builtin"])
            source = f"builtin:{entry['builtin']}"
            generation, context = facts["generationConfig"], facts.get("maxContext")
        else:
            facts = {k: entry.get(k, default) for k, default in REAL_ENTRY_DEFAULTS.items()}
            source = f"path:{entry.get('path')}" if entry.get("path") else "hub-cache"
            generation, context = _real_generation(entry)
        return {
            "id": entry["id"],
            "source": source,
            "modality": facts["modality"],
            "parameters": facts["parameters"],
            "precisions": list(facts["precisions"]),
            "gpuCounts": list(facts["gpuCounts"]),
            "generationConfig": generation,  # the model's own (where readable here), the entry's over it
            # what a request that names no sampling settings gets (shared/load_spec.generation_defaults)
            "generationDefaults": generation_defaults(generation, context),
            "loraTargetModules": list(facts["loraTargetModules"]),
        }


def _real_generation(entry: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
    """A real entry's generation config and context as it loads: the model's own files where its
    directory is readable here (a `path:` entry; a model directory may be local to the GPU nodes),
    with the entry's generationConfig over them; else the entry's alone (context unknown)."""
    from pathlib import Path

    from shared.load_spec import model_generation_config, model_max_context

    directory = Path(entry["path"]) if entry.get("path") else None
    if directory is not None and directory.is_dir():
        return model_generation_config(directory, entry.get("generationConfig")), model_max_context(directory)
    return dict(entry.get("generationConfig") or {}), None
