"""The base-model catalog (SPEC 2.1): entries from the deployment config, with their facts.

A built-in entry (`builtin: NAME`) is made offline on first use (shared.tiny_models) and its facts
read from the model it built; a real entry (`path: DIR`) declares its facts in the config and
loads from that local directory through the same loading code (shared.models).
"""

from __future__ import annotations

from typing import Any

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
            f"model {model_id} is not in this deployment's catalog",
            details={"model": model_id, "catalog": self.ids()},
        )

    def get(self, model_id: str) -> dict[str, Any]:
        return self.describe(self.raw(model_id))

    def list(self) -> list[dict[str, Any]]:
        return [self.describe(entry) for entry in self.config.catalog]

    def describe(self, entry: dict[str, Any]) -> dict[str, Any]:
        if entry.get("builtin"):
            from shared.tiny_models import builtin_metadata

            facts = builtin_metadata(entry["builtin"], self.artifacts)
            source = f"builtin:{entry['builtin']}"
        else:
            facts = {k: entry.get(k, default) for k, default in REAL_ENTRY_DEFAULTS.items()}
            source = f"path:{entry.get('path')}" if entry.get("path") else "hub-cache"
        return {
            "id": entry["id"],
            "source": source,
            "modality": facts["modality"],
            "parameters": facts["parameters"],
            "precisions": list(facts["precisions"]),
            "gpuCounts": list(facts["gpuCounts"]),
            "generationConfig": facts["generationConfig"],
            "loraTargetModules": list(facts["loraTargetModules"]),
        }
