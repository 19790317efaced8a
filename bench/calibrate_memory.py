"""bench/gpu_calibrate.py, part (c): the resolver's memory estimate against what training really takes.

Each case (shape, method, engine, precision) trains 2 steps of the real engine in a fresh process
(`python bench/gpu_calibrate.py --memory-case JSON`), so every case starts from an empty GPU and a
failure, out-of-memory included, is that case's alone: `sft-single` and `grpo-single` run their engine
function as on one device, `sft-fsdp` runs it as rank 0 of a world of one (FSDP2 over one GPU, as a
node runs it; the environment torch.distributed reads is set as engines/distributed.py sets it).
The plan: LoRA rank 8 on every linear layer, batch 8, maxSeqLength 512 with every row longer than
that (sft: chat rows truncated to 512 tokens; grpo: 2 prompts of about 480 tokens x 4 completions of
up to 128), gradient accumulation 1: the plan schema's defaults, at full length.

Measured: on CUDA `torch.cuda.max_memory_allocated` of the training process (what the estimate's
trainer part stands for), its `max_memory_reserved`, and the GPU's peak memory in use above what it
had before (every process: for grpo the rollout server too); on the CPU (dry run) the peak resident
set over the one after imports. Estimated: `shared.planning.resolver.trainer_memory_gib` (the trainer) and
`training_memory_gib` (with the rollout server for grpo), from the model's config and exact
parameter count. Printed as a table for docs/sharding.md.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.calibrate_kit import GIB, Context, child_env, free_cuda

ROOT = Path(__file__).resolve().parents[1]
WORDS = ("the quick brown fox jumps over lazy dog pack my box with five dozen liquor jugs answer question "
         "briefly helpful assistant numbers together reverse word hello world today fine thank you").split()
STEPS = 2
# About how long one case takes on the H200 (a fresh process, the model loaded, 2 steps): guesses.
CASE_SECONDS = {"qwen3-0.6b": 30.0, "qwen3-1.7b": 35.0, "qwen3-8b": 55.0}
GRPO_EXTRA_SECONDS = 20.0  # the rollout server's start and generation
CASE_TIMEOUT_S = 900.0  # a case past its budget by this much is stopped: something hangs


def cases() -> list[tuple[str, str, str, str]]:
    """(shape, method, engine, precision), the most telling first: bf16 (how GPUs train) on the
    shapes part (a) builds anyway, then fp32 and FSDP, then the 8B shape (its own 16 GB build)."""
    order = []
    for shape in ("qwen3-1.7b", "qwen3-0.6b"):
        order += [(shape, "sft", "sft-single", "bf16"), (shape, "grpo", "grpo-single", "bf16")]
    for shape in ("qwen3-1.7b", "qwen3-0.6b"):
        order += [(shape, "sft", "sft-fsdp", "bf16"), (shape, "sft", "sft-single", "fp32"),
                  (shape, "grpo", "grpo-single", "fp32"), (shape, "sft", "sft-fsdp", "fp32")]
    order += [("qwen3-8b", "sft", "sft-single", "bf16"), ("qwen3-8b", "sft", "sft-fsdp", "bf16"),
              ("qwen3-8b", "grpo", "grpo-single", "bf16"), ("qwen3-8b", "sft", "sft-single", "fp32"),
              ("qwen3-8b", "sft", "sft-fsdp", "fp32"), ("qwen3-8b", "grpo", "grpo-single", "fp32")]
    return order


def case_seconds(shape: str, method: str) -> float:
    return CASE_SECONDS[shape] + (GRPO_EXTRA_SECONDS if method == "grpo" else 0.0)


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def plan_of(method: str, precision: str, shape_name: str):
    from shared.plans import TrainingPlan

    body = {
        "method": method, "model": f"bench/{shape_name}", "dataset": "bench-rows", "precision": precision,
        "adapter": {"rank": 8, "alpha": 16, "dropout": 0.0, "targetModules": "all-linear"},
        "hyperparameters": {"learningRate": 1e-4, "maxSteps": STEPS, "epochs": None, "batchSize": 8,
                            "gradientAccumulation": 1, "warmupSteps": 0, "seed": 1, "maxSeqLength": 512},
        "snapshots": {"everySteps": None}, "execution": {"gpus": 1},
    }
    if method == "grpo":
        body["grpo"] = {"klPenalty": 0.0, "numGenerations": 4, "maxCompletionLength": 128, "temperature": 1.0,
                        "rewards": [{"function": "length", "target": 64, "weight": 1.0}]}
    return TrainingPlan.from_dict(body)


def write_dataset(method: str, path: Path) -> Path:
    """Rows longer than maxSeqLength: sft chat rows of ~750 tokens, grpo prompts of ~480."""
    rng = random.Random(0)
    if method == "sft":
        rows = [{"messages": [{"role": "user", "content": _text(rng, 150)},
                              {"role": "assistant", "content": _text(rng, 150)}]} for _ in range(8 * STEPS)]
    else:
        rows = [{"prompt": _text(rng, 190)} for _ in range(2 * STEPS)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _rss() -> int:
    import resource

    return int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize()


def child(raw: str) -> int:
    """In a fresh process: train the case, print what it took as one JSON line."""
    case = json.loads(raw)
    import datasets  # noqa: F401  (imported before the baseline: code is not training memory)
    import peft  # noqa: F401
    import torch
    import transformers  # noqa: F401
    import trl  # noqa: F401

    from bench.calibrate_kit import DevicePeak
    from services.trainer_worker.engines import engine_function
    from services.trainer_worker.engines.base import TrainingJob
    from shared.plans import TrainingPlan
    from tests.trainer_worker.doubles import RecordingReporter

    device = case["device"]
    if case["engine"] == "sft-fsdp":  # rank 0 of a world of one, as engines/distributed.py starts a rank
        from shared.process.ports import free_port

        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), RANK="0", LOCAL_RANK="0",
                          WORLD_SIZE="1", LOCAL_WORLD_SIZE="1")
    work = Path(case["work"])
    plan = TrainingPlan.from_dict(case["plan"])
    job = TrainingJob(f"run-memory-{case['engine']}", plan, case["engine"], Path(case["modelDir"]),
                      write_dataset(plan.method, work / "rows.jsonl"), work, [case["slot"]])
    baseline = _rss()
    if device == "cuda":
        torch.cuda.init()
        torch.cuda.reset_peak_memory_stats()
    reporter = RecordingReporter()
    with DevicePeak(device) as device_peak:
        result = engine_function(job.engine)(job, reporter)
    out = {"finalStep": result.final_step, "losses": [p.get("loss") for p in reporter.points]}
    if device == "cuda":
        out.update(peakBytes=torch.cuda.max_memory_allocated(), reservedBytes=torch.cuda.max_memory_reserved(),
                   devicePeakAddedBytes=device_peak.added_bytes)
    else:
        import resource

        out.update(peakBytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - baseline,
                   reservedBytes=None, devicePeakAddedBytes=None)
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
    print("MEMORY-CASE " + json.dumps(out), flush=True)
    return 0


def run_case(ctx: Context, shape_name: str, method: str, engine: str, precision: str) -> dict[str, Any]:
    from services.trainer_worker.engines.rollout_sizes import model_facts
    from shared.planning.resolver import trainer_memory_gib, training_memory_gib

    model_dir = ctx.model(shape_name)
    shape = ctx.shape(shape_name)
    plan = plan_of(method, precision, shape.name)
    work = ctx.work / "memory" / f"{shape.name}-{engine}-{precision}"
    work.mkdir(parents=True, exist_ok=True)
    case = {"device": ctx.device, "slot": ctx.slot, "engine": engine, "plan": plan.to_dict(), "modelDir": str(model_dir),
            "work": str(work)}
    free_cuda()
    started = time.perf_counter()
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_calibrate.py"), "--memory-case", json.dumps(case)],
                          cwd=ROOT, capture_output=True, text=True, env=child_env(),
                          timeout=min(max(60.0, ctx.left_s() + 60), CASE_TIMEOUT_S))
    (work / "case.log").write_text(done.stdout + done.stderr)
    marked = [line for line in done.stdout.splitlines() if line.startswith("MEMORY-CASE ")]
    if done.returncode != 0 or not marked:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"the case's process exited with {done.returncode}: {' | '.join(tail)}")
    measured = json.loads(marked[-1][len("MEMORY-CASE "):])
    facts = model_facts(model_dir, parameters=shape.parameters())
    sharded = engine == "sft-fsdp"
    result = {"part": "memory", "shape": shape.name, "method": method, "engine": engine, "precision": precision,
              "parameters": shape.parameters(), **measured,
              "trainerEstimateGiB": trainer_memory_gib(plan, model=facts, sharded=sharded),
              "estimateGiB": training_memory_gib(plan, model=facts, sharded=sharded),
              "seconds": time.perf_counter() - started}
    result["measuredOverEstimate"] = result["peakBytes"] / GIB / result["trainerEstimateGiB"]
    print("memory " + row(result), flush=True)
    return result


def row(r: dict[str, Any]) -> str:
    def gib(value):
        return "n/a" if value is None else f"{value / GIB:.2f}"

    total = f"{r['estimateGiB']:.2f}" if r["method"] == "grpo" else "="
    return (f"| {r['shape']} | {r['method']} | {r['engine']} | {r['precision']} | {r['trainerEstimateGiB']:.2f} | "
            f"{gib(r['peakBytes'])} | {r['measuredOverEstimate']:.2f} | {gib(r['reservedBytes'])} | {total} | "
            f"{gib(r['devicePeakAddedBytes'])} |")


HEADER = ["| model | method | engine | precision | estimate GiB (trainer) | measured GiB (max_memory_allocated) | "
          "measured / estimate | reserved GiB | estimate GiB (with rollout server) | device peak GiB (all processes) |",
          "|---|---|---|---|---|---|---|---|---|---|"]
