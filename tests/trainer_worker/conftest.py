from pathlib import Path

import pytest

from shared.artifacts import ArtifactRoot
from shared.tiny_models import ensure_builtin


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> Path:
    """The built-in tiny model, built once for every engine test."""
    return ensure_builtin("tiny-qwen3", ArtifactRoot(tmp_path_factory.mktemp("artifacts")))
