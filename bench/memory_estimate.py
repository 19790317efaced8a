"""Memory estimate calibration (not a test): `python bench/memory_estimate.py [STEPS] [OUT.json]`.

Compares the resolver's per-GPU estimate (`shared.planning.resolver.trainer_memory_gib`, without its 0.5 GiB
CUDA runtime term, which a CPU process does not have) with the peak memory an sft run really takes
on one CPU slot: the peak resident set (`resource.getrusage` ru_maxrss, the kernel's high-water mark,
which sees torch's own allocator; tracemalloc sees only Python objects and misses tensors) of a fresh
process running the real engine (engines/sft.run_sft) for STEPS steps (default 3), minus its
resident set after torch, transformers, peft, trl and datasets are imported, before the model is loaded.

Two models, both built here (nothing downloaded): the built-in tiny model, and the ~100M
Qwen3-style model of bench/grpo_handoff.py. fp32, LoRA rank 8 on every linear layer, batch 8,
maxSeqLength 256 (the sample dataset's rows are shorter: each micro-batch is padded to its longest
row, so the estimate, which takes full-length rows, is an upper bound on the activations).

On CPU the engine trains without activation checkpointing (engines/kit.py), so every layer's
activations are kept; the estimate assumes checkpointing (how CUDA runs train). Results: docs/sharding.md.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GIB = 1024**3


def _rss_now() -> float:
    """This process's resident set now, in bytes (Linux /proc)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize()


def measure(model_dir: str, work: str, steps: int) -> dict:
    """In this (fresh) process: train, and report the peak resident set over the post-import one."""
    # everything the engine imports, imported before the baseline: their code is not training memory
    import datasets  # noqa: F401
    import peft  # noqa: F401
    import torch  # noqa: F401
    import transformers  # noqa: F401
    from trl import SFTConfig, SFTTrainer  # noqa: F401

    from services.trainer_worker.engines.sft import run_sft
    from tests.trainer_worker.doubles import RecordingReporter, make_job

    baseline = _rss_now()
    job = make_job(Path(model_dir), Path(work), maxSteps=steps, every_steps=None, batchSize=8, maxSeqLength=256)
    run_sft(job, RecordingReporter())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"baselineBytes": baseline, "peakBytes": peak, "plan": job.plan.to_dict()}


def estimate(model_dir: Path, plan) -> dict:
    from services.trainer_worker.engines.rollout_sizes import model_facts
    from shared.models.loading import load_causal_lm
    from shared.planning.resolver import RUNTIME_GIB, trainer_memory_gib

    parameters = sum(p.numel() for p in load_causal_lm(model_dir, "fp32").parameters())
    facts = model_facts(model_dir, parameters=parameters)
    return {"parameters": parameters, "estimateGiB": trainer_memory_gib(plan, model=facts) - RUNTIME_GIB}


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--measure":
        print(json.dumps(measure(argv[1], argv[2], int(argv[3]))))
        return 0
    steps = int(argv[0]) if argv else 3
    from bench.grpo_handoff import build_model
    from shared.models.tiny_models import ensure_builtin
    from shared.plans import TrainingPlan
    from shared.store.artifacts import ArtifactRoot

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        models = {"builtin/tiny-qwen3": ensure_builtin("tiny-qwen3", ArtifactRoot(tmp / "artifacts"))}
        build_model(tmp / "qwen3-100m")
        models["qwen3-100m (bench/grpo_handoff.py)"] = tmp / "qwen3-100m"
        for name, model_dir in models.items():
            done = subprocess.run([sys.executable, __file__, "--measure", str(model_dir), str(tmp / name.split()[0]),
                                   str(steps)], capture_output=True, text=True, check=True, cwd=ROOT)
            measured = json.loads(done.stdout.strip().splitlines()[-1])
            guess = estimate(model_dir, TrainingPlan.from_dict(measured["plan"]))
            used = (measured["peakBytes"] - measured["baselineBytes"]) / GIB
            rows.append({"model": name, "parameters": guess["parameters"], "steps": steps,
                         "estimateGiB": round(guess["estimateGiB"], 3), "measuredGiB": round(used, 3),
                         "estimateOverMeasured": round(guess["estimateGiB"] / used, 2)})
            print(f"{name}: {guess['parameters'] / 1e6:.1f}M parameters, estimate {guess['estimateGiB']:.3f} GiB, "
                  f"measured peak {used:.3f} GiB, estimate/measured {guess['estimateGiB'] / used:.2f}", flush=True)
    if len(argv) > 1:
        Path(argv[1]).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
