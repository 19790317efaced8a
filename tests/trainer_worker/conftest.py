from pathlib import Path

import pytest

from shared.models.tiny_models import ensure_builtin
from shared.store.artifacts import ArtifactRoot


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> Path:
    """The built-in tiny model, built once for every engine test."""
    return ensure_builtin("tiny-qwen3", ArtifactRoot(tmp_path_factory.mktemp("artifacts")))


@pytest.fixture(scope="session")
def two_slots(model_dir, tmp_path_factory):
    """A 6-step sft-ddp run on two CPU slots, snapshots every 3 steps: (job, reporter, result).
    Shared by the DDP tests and the sharded engine's, which must train the same adapter."""
    from services.trainer_worker.engines import train
    from tests.trainer_worker.doubles import RecordingReporter, make_job

    reporter = RecordingReporter()
    job = make_job(model_dir, tmp_path_factory.mktemp("two"), maxSteps=6, every_steps=3, devices=2)
    return job, reporter, train(job, reporter)
