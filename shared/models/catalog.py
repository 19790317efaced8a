"""The base-model catalog (SPEC 2.1): entries from the deployment config and the models admins
imported (`training base-models import`), with their facts.

A built-in entry (`builtin: NAME`) has facts that follow from its spec (shared.models.tiny_models; the
model itself is built offline where it is first loaded, never by the API). Every other entry is a
real model whose facts come from its own files, read by shared.models.facts the same way for all:
a local directory (`path: DIR`), the local Hugging Face hub cache (neither `builtin` nor `path`: its
id is the repo id, `revision` optional), or an imported model (`artifact: KEY`, a directory in the
artifact store, kept in Redis under Keys.imported_models). All load through the same loading code
(shared.models.loading), never downloading.

What the config entry declares (precisions, gpuCounts; for a model whose files the API cannot read,
parameters and loraTargetModules too) fills what the files do not say; the shape (hiddenSize,
layers, heads, kvHeads, intermediateSize, vocabSize, maxPositions, tiedEmbeddings), architecture,
parameter count, chat template and generation config are the files' whenever they are readable.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from shared import reasons
from shared.config.deployment import DeploymentConfig
from shared.errors import NotFound, ValidationFailed
from shared.models.facts import ModelRefused, read_model_facts
from shared.store.artifacts import ArtifactRoot

REAL_ENTRY_DEFAULTS = {
    "modality": "text",
    "precisions": ["bf16", "fp32"],
    "gpuCounts": [1],
    "generationConfig": {},
    "loraTargetModules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    "parameters": None,
}
# What the files say of a model, as the catalog shows it (null where they do not say)
FILE_FACTS = ("architecture", "modelType", "hiddenSize", "layers", "heads", "kvHeads", "intermediateSize", "vocabSize",
              "maxPositions", "tiedEmbeddings", "chatTemplate")


class Catalog:
    def __init__(self, config: DeploymentConfig, artifacts: ArtifactRoot, store: Any = None):
        """`store` (shared.store.documents.Store): where imported models are found; without it, the config's only."""
        self.config = config
        self.artifacts = artifacts
        self.store = store

    def _imported(self) -> list[dict[str, Any]]:
        if self.store is None:
            return []
        found = self.store.redis.hgetall(self.store.keys.imported_models())
        return sorted((json.loads(v) for v in found.values()), key=lambda e: e["id"])

    def _imported_one(self, model_id: str) -> dict[str, Any] | None:
        if self.store is None:
            return None
        raw = self.store.redis.hget(self.store.keys.imported_models(), model_id)
        return json.loads(raw) if raw else None

    def entries(self) -> list[dict[str, Any]]:
        return [*self.config.catalog, *self._imported()]

    def ids(self) -> list[str]:
        return [entry["id"] for entry in self.entries()]

    def raw(self, model_id: str) -> dict[str, Any]:
        for entry in self.config.catalog:
            if entry["id"] == model_id:
                return entry
        imported = self._imported_one(model_id)
        if imported is not None:
            return imported
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
        (shared.models.loading.model_dir_for), with the same sentence, for a node whose cache differs.
        A `path:` entry is not checked here: a model directory may be local to the GPU nodes."""
        from shared.models.loading import hub_snapshot_dir, is_hub_entry

        entry = self.raw(model_id)
        if is_hub_entry(entry):
            hub_snapshot_dir(entry)
        return entry

    def get(self, model_id: str) -> dict[str, Any]:
        return self.describe(self.raw(model_id))

    def list(self) -> list[dict[str, Any]]:
        return [self.describe(entry) for entry in self.entries()]

    def describe(self, entry: dict[str, Any]) -> dict[str, Any]:
        from shared.models.load_spec import generation_defaults

        if entry.get("builtin"):
            from shared.models.tiny_models import builtin_facts

            facts = builtin_facts(entry["builtin"])
            source, facts_from = f"builtin:{entry['builtin']}", "spec"
            generation, context = facts["generationConfig"], facts.get("maxContext")
        else:
            facts = {k: entry.get(k, default) for k, default in REAL_ENTRY_DEFAULTS.items()}
            from_files = self.file_facts(entry)
            facts_from = "files" if from_files else "catalog entry"
            if from_files:
                facts.update({k: v for k, v in from_files.items() if k in FILE_FACTS or k == "modality"})
                for key in ("parameters", "loraTargetModules", "generationConfig"):
                    if from_files.get(key) and key not in entry:
                        facts[key] = from_files[key]
            source = self._source(entry)
            generation, context = self._real_generation(entry)
        described = {
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
        described.update({k: facts.get(k, entry.get(k)) for k in FILE_FACTS})
        described["factsFrom"] = facts_from
        if entry.get("imported"):
            described["imported"] = entry["imported"]
        return described

    @staticmethod
    def _source(entry: dict[str, Any]) -> str:
        if entry.get("artifact"):
            return "imported"
        return f"path:{entry.get('path')}" if entry.get("path") else "hub-cache"

    def file_facts(self, entry: dict[str, Any]) -> dict[str, Any] | None:
        """What a real entry's own files say (shared.models.facts), or None where this machine cannot
        read them: a `path:` local to the GPU nodes, a hub-cache model not in this cache, files
        that do not parse (the worker then says what is wrong when it loads the model)."""
        from shared.models.loading import model_dir_for

        try:
            directory = model_dir_for(entry, self.artifacts)
            return read_model_facts(directory, model=entry["id"])
        except (ValidationFailed, ModelRefused, OSError):
            return None

    def _real_generation(self, entry: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
        """A real entry's generation config and context as it loads: the model's own files where its
        directory is readable here (a model directory may be local to the GPU nodes), with the
        entry's generationConfig over them; else the entry's alone (context unknown)."""
        from shared.models.load_spec import model_generation_config, model_max_context
        from shared.models.loading import model_dir_for

        try:
            directory = Path(model_dir_for(entry, self.artifacts))
        except (ValidationFailed, OSError):
            directory = None
        if directory is not None and directory.is_dir():
            return model_generation_config(directory, entry.get("generationConfig")), model_max_context(directory)
        return dict(entry.get("generationConfig") or {}), None
