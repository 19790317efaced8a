"""GRPO hand-off benchmark (not a test): `python bench/grpo_handoff.py [STEPS] [OUT.json]`.

Compares, in one run on the CPU, the two ways a GRPO trainer can keep its rollout server on the
current policy (SPEC 4):

- **adapter** (what the grpo engine does): after each update, save only the LoRA adapter as
  safetensors, load it into the serving process with `/v1/load_lora_adapter` under a new name and
  unload the previous one.
- **full** (the old way): fold the adapter into the base weights (PEFT merge, then unmerge to keep
  training), save every weight as safetensors, and have the serving process load them all
  (`/v1/update_weights` of the built-in server), generating with its bare base model.

Both train the same seeded GRPO run with the real engine (engines/grpo.run_grpo, its only
difference the `rollout_server` class) on a ~100M-parameter Qwen3-style model built here with
random weights and the built-in tiny model's tokenizer (nothing is downloaded): 16 layers, hidden
768, fp32, LoRA rank 16 on every linear layer. Each step: 2 prompts x 4 completions of up to 16
tokens. Step 1 of each run hands nothing over (the server starts with the policy), so the figures
are over steps 2..STEPS+1 (default STEPS 6): per step handoffBytes, handoffSeconds and stepSeconds
(generation + hand-off + scoring + update), medians, and full/adapter ratios.

Both runs' serving processes read what they are handed from the local disk, by path: the bytes are
what a remote serving process would have to receive. Results: docs/grpo.md.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from services.trainer_worker.engines.base import TrainingJob  # noqa: E402
from services.trainer_worker.engines.grpo import run_grpo  # noqa: E402
from services.trainer_worker.engines.rollouts import HandOff, RolloutServer  # noqa: E402
from shared.artifacts import ArtifactRoot  # noqa: E402
from shared.tiny_models import ensure_builtin  # noqa: E402

SHAPE = dict(hidden_size=768, num_hidden_layers=16, num_attention_heads=12, num_key_value_heads=4, head_dim=64,
             intermediate_size=2048)
PROMPTS = ["The quick brown fox", "Hello, world! How are you today?", "Please reverse this word.",
           "Let us add the numbers together.", "What is the answer?", "Pack my box with five dozen liquor jugs."]


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


class FullWeightsServer(RolloutServer):
    """The old way: the serving process holds the base model with the adapter folded in, and is
    sent every weight after each update."""

    def _initial_policy(self, peft_model, step):
        return "base", None  # a fresh LoRA adapter (B = 0) folds into the base weights unchanged

    def hand_off(self, peft_model, *, step: int) -> HandOff:
        from safetensors.torch import save_file

        started = time.perf_counter()
        directory = self.work_dir / "weights" / f"policy-{step}"
        directory.mkdir(parents=True, exist_ok=True)
        peft_model.merge_adapter()
        try:
            state = {name.replace(".base_layer", ""): tensor.detach().clone()
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


class Points:
    """A Reporter that keeps the metric points (and prints progress)."""

    def __init__(self, label: str):
        self.label, self.points = label, []

    def started(self, *, total_steps):
        pass

    def metrics(self, point):
        self.points.append(point)
        print(f"  {self.label} step {point['step']}: step {point['stepSeconds']:.2f}s, hand-off "
              f"{point['handoffBytes'] / 1e6:.1f} MB in {point['handoffSeconds']:.3f}s", flush=True)

    def event(self, message, level="info"):
        pass

    def snapshot(self, **kwargs):
        pass

    def stop_request(self):
        return None


def run(label: str, server_class, model_dir: Path, dataset: Path, work: Path, steps: int) -> list[dict]:
    plan = {
        "method": "grpo", "model": "bench/qwen3-100m", "precision": "fp32",
        "adapter": {"rank": 16, "alpha": 32, "dropout": 0.0, "targetModules": "all-linear"},
        "hyperparameters": {"learningRate": 1e-4, "maxSteps": steps + 1, "epochs": None, "batchSize": 8,
                            "gradientAccumulation": 1, "warmupSteps": 0, "seed": 7, "maxSeqLength": 256},
        "grpo": {"klPenalty": 0.0, "numGenerations": 4, "maxCompletionLength": 16, "temperature": 1.0,
                 "rewards": [{"function": "length", "target": 24, "weight": 1.0}]},
        "snapshots": {"everySteps": None}, "execution": {"gpus": 1},
    }
    job = TrainingJob(f"run-bench-{label}", plan, "grpo-single", model_dir, dataset, work / label, ["cpu:0"])
    reporter = Points(label)
    run_grpo(job, reporter, rollout_server=server_class)
    return reporter.points[1:]  # step 1 hands nothing over in either run


def summary(points: list[dict]) -> dict:
    def median(key):
        return statistics.median(p[key] for p in points)

    return {key: median(key) for key in ("handoffBytes", "handoffSeconds", "generationSeconds", "updateSeconds",
                                         "stepSeconds")}


def main(argv: list[str]) -> dict:
    import torch

    steps = int(argv[0]) if argv else 6
    out = Path(argv[1]) if len(argv) > 1 else None
    torch.set_num_threads(max(1, torch.get_num_threads()))
    with tempfile.TemporaryDirectory(prefix="grpo-bench-") as tmp:
        tmp = Path(tmp)
        parameters = build_model(tmp / "model")
        print(f"model: {parameters / 1e6:.1f}M parameters", flush=True)
        dataset = tmp / "prompts.jsonl"
        dataset.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in PROMPTS))
        results = {}
        for label, server_class in (("adapter", RolloutServer), ("full", FullWeightsServer)):
            results[label] = summary(run(label, server_class, tmp / "model", dataset, tmp / "runs", steps))
    report = {
        "parameters": parameters, "steps": steps, "threads": torch.get_num_threads(), **results,
        "ratios": {key: results["full"][key] / results["adapter"][key]
                   for key in ("handoffBytes", "handoffSeconds", "stepSeconds")},
    }
    print(json.dumps(report, indent=2))
    if out:
        out.write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    main(sys.argv[1:])
