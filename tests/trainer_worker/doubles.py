"""Test doubles and helpers shared by the engine tests."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load_file

from services.trainer_worker.engines.base import Restore, TrainingJob
from shared.models.tiny_models import SAMPLE_DATASET
from tests.shared.plans.plan_fixtures import typed

PLAN = {
    "method": "sft",
    "model": "builtin/tiny-qwen3",
    "precision": "fp32",
    "adapter": {"rank": 8, "alpha": 16, "dropout": 0.0, "targetModules": "all-linear"},
    "hyperparameters": {
        "learningRate": 0.002, "maxSteps": 30, "epochs": None, "batchSize": 8, "gradientAccumulation": 1,
        "warmupSteps": 0, "seed": 42, "maxSeqLength": 256,
    },
    "snapshots": {"everySteps": 10},
}


@dataclass
class RecordingReporter:
    """Test double for the Redis-backed reporter the worker passes in.

    Differs from the real one: it keeps every call in memory instead of writing run metrics,
    events and snapshot records to Redis, and the user asks to stop (`stop_with`: "cancel" or
    "pause") when the metrics of step `stop_after_step` arrive, instead of through the API setting
    a flag at any moment.
    """

    stop_after_step: int | None = None
    stop_with: str = "cancel"
    total_steps: int | None = None
    points: list[dict] = field(default_factory=list)
    events: list[tuple[str, str]] = field(default_factory=list)
    snapshots: list[dict] = field(default_factory=list)
    memory_reports: list[dict] = field(default_factory=list)
    samples_sent: list[dict] = field(default_factory=list)  # grpo: each step's rollout sample

    def started(self, *, total_steps: int) -> None:
        self.total_steps = total_steps

    def metrics(self, point: dict) -> None:
        self.points.append(point)

    def event(self, message: str, level: str = "info") -> None:
        self.events.append((level, message))

    def samples(self, sample: dict) -> None:
        self.samples_sent.append(sample)

    def snapshot(self, *, step: int, key: str, directory: Path, manifest: dict, final: bool) -> None:
        assert (directory / "snapshot.json").is_file()  # complete when announced
        self.snapshots.append({"step": step, "directory": directory, "manifest": manifest, "final": final})

    def memory(self, **kwargs) -> None:
        self.memory_reports.append(kwargs)

    def stop_request(self) -> str | None:
        if self.stop_after_step is not None and len(self.points) >= self.stop_after_step:
            return self.stop_with
        return None

    def what_trains(self) -> str:
        """The engine's opening sentence about what it trains: the first event after the one that
        says the base model was loaded ("loaded MODEL (N parameters, PRECISION) in S s")."""
        return next(message for _, message in self.events if not message.startswith("loaded "))

    def snapshot_at(self, step: int) -> Path:
        return next(s["directory"] for s in self.snapshots if s["step"] == step)


def make_job(model_dir: Path, work_dir: Path, *, dataset: Path = SAMPLE_DATASET, devices: int = 1,
             restore: Restore | None = None, every_steps: int | None = 10, run_id: str = "run-test",
             engine: str | None = None, **hyper) -> TrainingJob:
    plan = copy.deepcopy(PLAN)
    plan["hyperparameters"].update(hyper)
    plan["snapshots"]["everySteps"] = every_steps
    plan["execution"] = {"gpus": devices}
    engine = engine or ("sft-single" if devices == 1 else "sft-ddp")
    return TrainingJob(run_id, typed(plan), engine, model_dir, dataset, work_dir,
                       [f"cpu:{i}" for i in range(devices)], restore=restore)


def adapter_tensors(snapshot_dir: Path) -> dict[str, torch.Tensor]:
    return load_file(snapshot_dir / "adapter" / "adapter_model.safetensors")


def max_abs_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """Largest absolute difference over every tensor of two adapters with the same keys."""
    assert a.keys() == b.keys() and a
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)
