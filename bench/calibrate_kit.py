"""What the parts of bench/gpu_calibrate.py share: the run's context (device, work folder, time
budget, the models built so far), a case of work, a device-memory sampler and small formatters."""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from bench.qwen3_shapes import DRY_RUN, SHAPES, Shape, build_model

ROOT = Path(__file__).resolve().parents[1]
GIB = 1024**3
BUILT_MARKER = "built.json"  # written last in a model's folder: its build is complete
# About how long building each shape takes on the H200 (random weights drawn on the GPU, saved as
# bf16 safetensors, the tokenizer built once): guesses until the first run measures them.
BUILD_SECONDS = {"qwen3-0.6b": 20.0, "qwen3-1.7b": 25.0, "qwen3-8b": 75.0}
PROMPTS = ["The quick brown fox", "Hello, world! How are you today?", "Please reverse this word.",
           "Let us add the numbers together.", "What is the answer?", "Pack my box with five dozen liquor jugs.",
           "Name three colours of the rainbow.", "Count from one to ten in words."]


@dataclass
class Context:
    device: str  # "cuda" or "cpu" (the dry run)
    work: Path
    budget_s: float
    models: Path  # where models are built, and found built by an earlier call
    started: float = field(default_factory=time.perf_counter)
    built: dict[str, Path] = field(default_factory=dict)  # shape name -> model directory
    results: list[dict[str, Any]] = field(default_factory=list)

    @property
    def dry_run(self) -> bool:
        return self.device != "cuda"

    @property
    def slot(self) -> str:
        return "cuda:0" if self.device == "cuda" else "cpu:0"

    @property
    def precision(self) -> str:
        """The precision the GRPO and endpoint parts run in: bf16, as a GPU node runs them."""
        return "bf16"

    def shape(self, name: str) -> Shape:
        """The shape a case names (`qwen3-0.6b`...), or its toy stand-in in a dry run."""
        return SHAPES[DRY_RUN[name] if self.dry_run else name]

    def left_s(self) -> float:
        return self.budget_s - (time.perf_counter() - self.started)

    def is_built(self, name: str) -> bool:
        marker = self.models / self.shape(name).name / BUILT_MARKER
        return name in self.built or (marker.is_file() and
                                      json.loads(marker.read_text()) == {"parameters": self.shape(name).parameters()})

    def build_seconds(self, names: tuple[str, ...]) -> float:
        return sum(BUILD_SECONDS[n] for n in names if not self.is_built(n))

    def model(self, name: str) -> Path:
        """The model directory of shape `name`, built on first use (random bf16 weights drawn on the device)."""
        if name in self.built:
            return self.built[name]
        shape = self.shape(name)
        target = self.models / shape.name
        marker = target / BUILT_MARKER
        if self.is_built(name):
            print(f"found {shape.name} built by an earlier call in {target}", flush=True)
        else:
            tokenizers = [d for n, d in self.built.items() if self.shape(n).regular_tokens == shape.regular_tokens]
            started = time.perf_counter()
            marker.unlink(missing_ok=True)
            parameters = build_model(shape, target, device=self.device, precision="bf16",
                                     tokenizer_dir=tokenizers[0] if tokenizers else None)
            marker.write_text(json.dumps({"parameters": parameters}))  # last: the build is complete
            print(f"built {shape.name}: {parameters / 1e9:.3f}B parameters (random bf16 weights on {self.device}, "
                  f"tokenizer of {shape.regular_tokens + 26} tokens) in {time.perf_counter() - started:.1f}s",
                  flush=True)
        self.built[name] = target
        return target


@dataclass
class Case:
    """One piece of work, skipped with a printed reason when what is left of the budget cannot hold it."""

    part: str  # "grpo", "server-check", "endpoint" or "memory"
    name: str
    seconds: float  # about how long it runs on the H200, its models' builds not counted
    run: Callable[[Context], dict[str, Any]]
    needs: tuple[str, ...] = ()  # the shapes it builds if not built yet


class DevicePeak:
    """The most memory the GPU had in use (every process on it, e.g. a rollout server beside the
    trainer), sampled every `every_s` from another thread, above what it had in use at the start.
    On the CPU (the dry run) there is no such figure: `added_bytes` stays None."""

    def __init__(self, device: str, every_s: float = 0.02):
        self.device, self.every_s = device, every_s
        self.before: int | None = None
        self.peak: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _used(self) -> int:
        import torch

        free, total = torch.cuda.mem_get_info()
        return total - free

    def __enter__(self) -> DevicePeak:
        if self.device == "cuda":
            self.before = self.peak = self._used()
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(self.every_s):
            self.peak = max(self.peak or 0, self._used())

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self.peak = max(self.peak or 0, self._used())

    @property
    def added_bytes(self) -> int | None:
        return None if self.before is None else self.peak - self.before


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment for a child running this repository's code: the repository first
    on PYTHONPATH, what was there kept (on the GPU machine, the carried wheels' folder)."""
    env = {**os.environ, **(extra or {})}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return env


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation between the closest ranks."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    k = (len(ordered) - 1) * q / 100
    low = int(k)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def median(values: list[float]) -> float:
    return statistics.median(values)


def gib(value: float | int | None) -> str:
    return "n/a" if value is None else f"{value / GIB:.2f}"


def free_cuda() -> None:
    """Give back what this process's allocator holds between cases (the next case measures its own peak)."""
    import gc

    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
    except ImportError:
        pass
