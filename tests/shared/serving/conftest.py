from pathlib import Path

import pytest

from shared.models.load_spec import LoadSpec, load_spec_for
from shared.store.artifacts import ArtifactRoot
from tests.shared.serving.serving import make_adapter

TINY_ENTRY = {"id": "builtin/tiny-qwen3", "builtin": "tiny-qwen3"}
SERVED_NAME = "tiny"


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory) -> ArtifactRoot:
    return ArtifactRoot(tmp_path_factory.mktemp("artifacts"))


@pytest.fixture(scope="session")
def base_spec(artifacts) -> LoadSpec:
    return load_spec_for(entry=TINY_ENTRY, artifacts=artifacts, served_model_name=SERVED_NAME)


@pytest.fixture(scope="session")
def adapter_dirs(base_spec, tmp_path_factory) -> dict[str, Path]:
    """Two adapters with different random weights: each changes the base model's greedy output."""
    root = tmp_path_factory.mktemp("adapters")
    return {name: make_adapter(base_spec.model_dir, root / name, seed=seed)
            for name, seed in (("alpha", 1), ("beta", 2))}
