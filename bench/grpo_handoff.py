"""GRPO hand-off benchmark (not a test): `python bench/grpo_handoff.py [STEPS] [OUT.json]`.

Compares, in one run, the three ways a GRPO trainer can keep its rollout server on the current
policy (SPEC 4):

- **unmerged**: after each update, save only the LoRA adapter as safetensors, load it into the
  serving process with `/v1/load_lora_adapter` under a new name and unload the previous one; the
  server generates through PEFT's LoRA layers beside its base weights (how vLLM serves adapters).
- **folded** (what the grpo engine does on the built-in server): the same adapter bytes and call,
  but the server folds the adapter into its own copy of the base weights in place of the one before
  (load spec adapterMode folded, shared/serving/adapter_fold.py), so it generates at a plain
  model's speed.
- **full** (the old way): fold the adapter into the trainer's base weights (PEFT merge, then
  unmerge to keep training), save every weight as safetensors, and have the serving process load
  them all (`/v1/update_weights` of the built-in server), generating with its bare base model.

All three train the same seeded GRPO run with the real engine (engines/grpo.run_grpo, its only
difference the `rollout_server` class) on a ~100M-parameter Qwen3-style model built here with
random weights and the built-in tiny model's tokenizer (nothing is downloaded): 16 layers, hidden
768, fp32, LoRA rank 16 on every linear layer. Each step: 2 prompts x 4 completions of up to 16
tokens. Step 1 of each run hands nothing over (the server starts with the policy), so the figures
are over steps 2..STEPS+1 (default STEPS 6): per step handoffBytes, handoffSeconds,
generationSeconds, updateSeconds and stepSeconds (generation + hand-off + scoring + update),
medians, ratios against the unmerged way, and the load average before and after.

The serving processes read what they are handed from the local disk, by path: the bytes are what a
remote serving process would have to receive. bench/gpu_calibrate.py runs the same three ways on a
GPU with Qwen3-shaped models. Results: docs/grpo.md.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from services.trainer_worker.engines.base import TrainingJob  # noqa: E402
from services.trainer_worker.engines.grpo import run_grpo  # noqa: E402
from services.trainer_worker.engines.rollouts import HandOff, RolloutServer  # noqa: E402
from shared.models.tiny_models import ensure_builtin  # noqa: E402
from shared.plans import TrainingPlan  # noqa: E402
from shared.store.artifacts import ArtifactRoot  # noqa: E402

SHAPE = dict(hidden_size=768, num_hidden_layers=16, num_attention_heads=12, num_key_value_heads=4, head_dim=64,
             intermediate_size=2048)
PROMPTS = ["The quick brown fox", "Hello, world! How are you today?", "Please reverse this word.",
           "Let us add the numbers together.", "What is the answer?", "Pack my box with five dozen liquor jugs."]
FIGURES = ("handoffBytes", "handoffSeconds", "generationSeconds", "updateSeconds", "stepSeconds")


def build_model(target: Path) -> int:
    """A ~100M-parameter Qwen3-style model with random weights and the tiny model's tokenizer."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    tiny = ensure_builtin("tiny-qwen3", ArtifactRoot(target.parent / "artifacts"))
    config = AutoConfig.from_pretrained(tiny)
    for key, value in SHAPE.items():
        setattr(config, key, value)
    config.layer_types = ["full_attention"] * SHAPE["num_hidden_layers"]
    config.initializer_range = 0.02
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config)
    model.save_pretrained(str(target), safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json"):
        if (tiny / name).exists():
            shutil.copy2(tiny / name, target / name)
    return sum(p.numel() for p in model.parameters())


@dataclass
class CountingServer(RolloutServer):
    """The engine's rollout server (its adapter mode as the engine picks it: folded on the built-in
    server), keeping the (step, prompts, completions per prompt) of every completions request."""

    def __post_init__(self):
        self.requests: list[tuple[int | None, int, int]] = []

    def sample(self, prompts, *, n, **kwargs):
        self.requests.append((self.handed_step, len(prompts), n))
        return super().sample(prompts, n=n, **kwargs)


@dataclass
class UnmergedServer(CountingServer):
    """The adapter served unmerged: PEFT's LoRA layers beside the base weights."""

    adapter_mode: str | None = "unmerged"


@dataclass
class FullWeightsServer(CountingServer):
    """The old way: the serving process holds the base model with the adapter folded in, and is
    sent every weight after each update."""

    def _initial_policy(self, peft_model, step):
        return "base", None  # a fresh LoRA adapter (B = 0) folds into the base weights unchanged

    def hand_off(self, peft_model, *, step: int) -> HandOff:
        from safetensors.torch import save_file

        started = time.perf_counter()
        directory = self.work_dir / "weights" / f"policy-{step}"
        directory.mkdir(parents=True, exist_ok=True)
        # In bf16, PEFT's merge then unmerge rounds the trainer's base weights a little each time
        # (the drift the folded way avoids): harmless over a benchmark's few steps.
        peft_model.merge_adapter()
        try:
            state = {name.replace(".base_layer", ""): tensor.detach().to("cpu", copy=True)
                     for name, tensor in peft_model.get_base_model().state_dict().items() if "lora_" not in name}
        finally:
            peft_model.unmerge_adapter()
        save_file(state, str(directory / "model.safetensors"))
        size = sum(p.stat().st_size for p in directory.iterdir())
        self._post("/v1/update_weights", {"path": str(directory)})
        if self.current_dir is not None:
            shutil.rmtree(self.current_dir, ignore_errors=True)
        self.current, self.current_dir, self.handed_step = "base", directory, step
        return HandOff(step=step, name="base", bytes=size, seconds=time.perf_counter() - started)


WAYS: dict[str, type[RolloutServer]] = {"unmerged": UnmergedServer, "folded": CountingServer, "full": FullWeightsServer}


class Points:
    """A Reporter that keeps the metric points (and prints progress)."""

    def __init__(self, label: str, *, quiet: bool = False):
        self.label, self.points, self.quiet = label, [], quiet

    def started(self, *, total_steps):
        pass

    def metrics(self, point):
        self.points.append(point)
        if not self.quiet:
            print(f"  {self.label} step {point['step']}: step {point['stepSeconds']:.2f}s, generation "
                  f"{point['generationSeconds']:.2f}s, hand-off {point['handoffBytes'] / 1e6:.1f} MB in "
                  f"{point['handoffSeconds']:.3f}s", flush=True)

    def event(self, message, level="info"):
        pass

    def samples(self, sample):
        pass

    def snapshot(self, **kwargs):
        pass

    def memory(self, **kwargs):
        pass

    def stop_request(self):
        return None


def grpo_plan(steps: int, *, precision: str = "fp32", rank: int = 16, batch: int = 8, generations: int = 4,
              completion_tokens: int = 16, model: str = "bench/qwen3-100m") -> TrainingPlan:
    """A GRPO plan of `steps` measured steps (plus step 1, which hands nothing over)."""
    return TrainingPlan.from_dict({
        "method": "grpo", "model": model, "dataset": "bench-prompts", "precision": precision,
        "adapter": {"rank": rank, "alpha": 2 * rank, "dropout": 0.0, "targetModules": "all-linear"},
        "hyperparameters": {"learningRate": 1e-4, "maxSteps": steps + 1, "epochs": None, "batchSize": batch,
                            "gradientAccumulation": 1, "warmupSteps": 0, "seed": 7, "maxSeqLength": 256},
        "grpo": {"klPenalty": 0.0, "numGenerations": generations, "maxCompletionLength": completion_tokens,
                 "temperature": 1.0, "rewards": [{"function": "length", "target": 24, "weight": 1.0}]},
        "snapshots": {"everySteps": None}, "execution": {"gpus": 1},
    })


def run(label: str, server_class, model_dir: Path, dataset: Path, work: Path, steps: int, *,
        plan: TrainingPlan | None = None, device: str = "cpu:0", quiet: bool = False) -> tuple[list[dict], RolloutServer]:
    """One GRPO run with `server_class`: the metric points of steps 2.. and the rollout server it used."""
    started: list[RolloutServer] = []

    class Kept(server_class):  # the run's server, kept for its request counts
        def __post_init__(self):
            super().__post_init__()
            started.append(self)

    Kept.__name__ = server_class.__name__
    job = TrainingJob(f"run-bench-{label}", plan or grpo_plan(steps), "grpo-single", model_dir, dataset, work / label,
                      [device])
    reporter = Points(label, quiet=quiet)
    run_grpo(job, reporter, rollout_server=dataclass(Kept))
    return reporter.points[1:], started[0]  # step 1 hands nothing over in any way


def summary(points: list[dict]) -> dict:
    return {key: statistics.median(p[key] for p in points) for key in FIGURES}


def write_prompts(path: Path) -> Path:
    path.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in PROMPTS))
    return path


def main(argv: list[str]) -> dict:
    import torch

    steps = int(argv[0]) if argv else 6
    out = Path(argv[1]) if len(argv) > 1 else None
    torch.set_num_threads(max(1, torch.get_num_threads()))
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="grpo-bench-") as tmp:
        tmp = Path(tmp)
        parameters = build_model(tmp / "model")
        print(f"model: {parameters / 1e6:.1f}M parameters", flush=True)
        dataset = write_prompts(tmp / "prompts.jsonl")
        results = {}
        for label, server_class in WAYS.items():
            points, _ = run(label, server_class, tmp / "model", dataset, tmp / "runs", steps)
            results[label] = summary(points)
    report = {
        "parameters": parameters, "steps": steps, "threads": torch.get_num_threads(),
        "loadAverage": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
        **results,
        "overUnmerged": {label: {key: results[label][key] / results["unmerged"][key] for key in FIGURES}
                         for label in ("folded", "full")},
    }
    print(json.dumps(report, indent=2))
    if out:
        out.write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    main(sys.argv[1:])
