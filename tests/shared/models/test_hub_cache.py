"""Catalog models from the local Hugging Face hub cache (SPEC 1: "load from a local path or a hub
cache with the same code"): found offline, loaded by the one loading path, refused word for word
when they are not there."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from shared.errors import NotFound, ValidationFailed
from shared.models.catalog import Catalog
from shared.models.load_spec import load_spec_for
from shared.models.loading import hub_cache_dir, load_causal_lm, load_tokenizer, model_dir_for
from shared.models.tiny_models import ensure_builtin
from shared.store.artifacts import ArtifactRoot
from tests.conftest import make_config
from tests.shared.models.hub_cache import add_to_hub_cache, fake_commit

REPO = "tiny-org/tiny-qwen3"


@pytest.fixture
def artifacts(shared_artifacts) -> ArtifactRoot:
    artifacts = ArtifactRoot(shared_artifacts)
    ensure_builtin("tiny-qwen3", artifacts)
    return artifacts


@pytest.fixture
def hub(tmp_path, monkeypatch):
    cache = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    return cache


def test_a_hub_entry_is_its_snapshot_and_loads_like_the_built_in(artifacts, hub):
    built = artifacts.model_dir("tiny-qwen3")
    snapshot = add_to_hub_cache(hub, REPO, built)
    assert model_dir_for({"id": REPO}, artifacts) == snapshot
    assert snapshot == hub / "models--tiny-org--tiny-qwen3" / "snapshots" / fake_commit(f"{REPO}@main")

    model, tokenizer = load_causal_lm(snapshot, "fp32"), load_tokenizer(snapshot)
    reference = load_causal_lm(built, "fp32")
    for (name, weight), (_, same) in zip(model.state_dict().items(), reference.state_dict().items()):
        assert torch.equal(weight, same), name
    ids = tokenizer("Reverse: stone", return_tensors="pt").input_ids
    assert model(ids).logits.shape == (1, ids.shape[1], model.config.vocab_size)


def test_the_revision_picks_a_branch_tag_or_commit(artifacts, hub):
    built = artifacts.model_dir("tiny-qwen3")
    main = add_to_hub_cache(hub, REPO, built)
    tagged = add_to_hub_cache(hub, REPO, built, revision="v1", commit=fake_commit("v1"))
    assert model_dir_for({"id": REPO, "revision": "main"}, artifacts) == main
    assert model_dir_for({"id": REPO, "revision": "v1"}, artifacts) == tagged
    assert model_dir_for({"id": REPO, "revision": fake_commit("v1")}, artifacts) == tagged


def test_the_same_load_spec_as_every_other_entry(artifacts, hub):
    snapshot = add_to_hub_cache(hub, REPO, artifacts.model_dir("tiny-qwen3"))
    spec = load_spec_for(entry={"id": REPO, "precisions": ["bf16", "fp32"]}, artifacts=artifacts,
                         served_model_name="tiny")
    assert (spec.model, spec.model_dir, spec.dtype) == (REPO, str(snapshot), "fp32")
    assert spec.generation_config["max_new_tokens"] == 64  # the snapshot's generation_config.json


def test_a_model_not_in_the_cache_is_refused_with_the_fix(artifacts, hub):
    with pytest.raises(ValidationFailed) as refused:
        model_dir_for({"id": "Qwen/Qwen3-0.6B"}, artifacts)
    assert refused.value.message == (
        f"model Qwen/Qwen3-0.6B (revision main) is not in the Hugging Face hub cache at {hub}, and the trainer "
        f"never downloads models; download it into that cache first: hf download Qwen/Qwen3-0.6B --cache-dir {hub}")
    assert refused.value.details == {"field": "model", "model": "Qwen/Qwen3-0.6B", "revision": "main",
                                     "cacheDir": str(hub)}

    add_to_hub_cache(hub, REPO, artifacts.model_dir("tiny-qwen3"))
    with pytest.raises(ValidationFailed) as refused:  # cached, but not at this revision
        model_dir_for({"id": REPO, "revision": "v2"}, artifacts)
    assert refused.value.message == (
        f"model {REPO} (revision v2) is not in the Hugging Face hub cache at {hub}, and the trainer never "
        f"downloads models; download it into that cache first: hf download {REPO} --revision v2 --cache-dir {hub}")


def test_an_id_that_is_no_repo_id_is_refused(artifacts, hub):
    with pytest.raises(ValidationFailed) as refused:
        model_dir_for({"id": "team/qwen/8b"}, artifacts)
    assert refused.value.message == (
        "catalog entry team/qwen/8b names neither a built-in model nor a local path, and team/qwen/8b is not a "
        "Hugging Face repo id (ORG/NAME) to find in the hub cache")


def test_a_snapshot_without_config_json_is_refused(artifacts, hub, tmp_path):
    weights_only = tmp_path / "weights-only"
    weights_only.mkdir()
    (weights_only / "model.safetensors").write_bytes(b"x")
    snapshot = add_to_hub_cache(hub, "org/weights-only", weights_only)
    with pytest.raises(ValidationFailed, match=f"catalog entry org/weights-only points at {snapshot}, which holds no"):
        model_dir_for({"id": "org/weights-only"}, artifacts)


@pytest.mark.parametrize(
    ("env", "cache"),
    [({"HF_HUB_CACHE": "/c/hub", "HF_HOME": "/h"}, "/c/hub"),
     ({"HUGGINGFACE_HUB_CACHE": "/legacy", "HF_HOME": "/h"}, "/legacy"),
     ({"HF_HOME": "/h", "XDG_CACHE_HOME": "/x"}, "/h/hub"),
     ({"XDG_CACHE_HOME": "/x"}, "/x/huggingface/hub"),
     ({}, "/home/u/.cache/huggingface/hub")],
)
def test_the_cache_directory_follows_huggingface_hub(env, cache, monkeypatch):
    monkeypatch.setenv("HOME", "/home/u")  # what ~ expands to
    assert hub_cache_dir(env) == Path(cache)


def test_the_catalog_lists_it_and_checks_it_before_work_is_queued(artifacts, hub, redis_url, shared_artifacts):
    config = make_config(redis_url, "unused:", shared_artifacts, extra_catalog=[{"id": REPO, "revision": "v1"}])
    catalog = Catalog(config, artifacts)
    assert catalog.get(REPO)["source"] == "hub-cache"  # listed whether cached or not
    with pytest.raises(ValidationFailed, match=f"model {REPO} \\(revision v1\\) is not in the Hugging Face hub"):
        catalog.check_loadable(REPO)
    add_to_hub_cache(hub, REPO, artifacts.model_dir("tiny-qwen3"), revision="v1")
    assert catalog.check_loadable(REPO) == {"id": REPO, "revision": "v1"}
    # built-in and path entries are not looked for here (a path may exist only on the GPU nodes)
    assert catalog.check_loadable("Qwen/Qwen3-8B")["path"] == "/nonexistent/qwen3-8b"
    with pytest.raises(NotFound):
        catalog.check_loadable("org/absent")
