"""The catalog's description of a model (SPEC 2.1): its generation defaults (issue 29 item 3)."""

from __future__ import annotations

import json

from shared.config.deployment import parse_config
from shared.models.catalog import Catalog
from shared.store.artifacts import ArtifactRoot


def _catalog(tmp_path, entry) -> Catalog:
    config = parse_config({"redisUrl": "redis://127.0.0.1:6379/3", "artifactRoot": str(tmp_path / "artifacts"),
                           "pools": {"default": {"nodes": [{"name": "n", "devices": {"kind": "cpu", "count": 1}}]}},
                           "catalog": [entry]}, env={})
    return Catalog(config, ArtifactRoot(tmp_path / "artifacts"))


def test_a_path_model_shows_its_own_generation_config_and_context(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"max_position_embeddings": 8192}))
    (model / "generation_config.json").write_text(json.dumps({"do_sample": True, "temperature": 0.6,
                                                              "transformers_version": "5"}))
    entry = {"id": "org/m", "path": str(model), "generationConfig": {"top_p": 0.9}}
    described = _catalog(tmp_path, entry).get("org/m")
    assert described["generationConfig"] == {"do_sample": True, "temperature": 0.6, "top_p": 0.9}
    assert described["generationDefaults"] == {"temperature": 0.6, "topP": 0.9, "topK": 0, "repetitionPenalty": 1.0,
                                               "maxTokens": 1024, "maxTokensFrom": "deployment", "maxContext": 8192}


def test_a_catalog_entry_can_set_how_long_answers_run(tmp_path):
    entry = {"id": "org/m", "path": str(tmp_path / "elsewhere"), "generationConfig": {"max_new_tokens": 300}}
    defaults = _catalog(tmp_path, entry).get("org/m")["generationDefaults"]
    assert (defaults["maxTokens"], defaults["maxTokensFrom"], defaults["maxContext"]) == (300, "model", None)
