"""GPU calibration (not a test): `python bench/gpu_calibrate.py [--dry-run] [--budget-s S] [--only PARTS]
[--out FILE.json]`. On the GPU machine: `bash bench/gpu_run.sh gpu-calibrate python bench/gpu_calibrate.py`.

Measures on one CUDA GPU, in the order of what the figures are worth (docs/gpu-calibrate.md):

(a) `grpo`: GRPO with the built-in rollout server on Qwen3-0.6B- and Qwen3-1.7B-shaped models (random
    bf16 weights drawn on the GPU, a tokenizer of Qwen3's vocabulary built here: bench/qwen3_shapes.py),
    the three hand-off ways (folded, unmerged, full merged weights): the step split, hand-off bytes and
    seconds, peak GPU memory, the goal (hand-off <= 0.5 s and <= 5% of the step); `server-check`: the
    built-in server's generation is one batch on the GPU and uses the KV cache (bench/calibrate_grpo.py);
(b) `endpoint`: the built-in serving process on the 0.6B shape, time to READY, p50/p95 latency and
    output tokens/s for 1 and 8 concurrent streamed requests, base and adapter, against a bare
    transformers `generate` loop on the same model (bench/calibrate_endpoint.py);
(c) `memory`: for sft and grpo on the 0.6B, 1.7B and 8B shapes, fp32 and bf16, sft-single, sft-fsdp and
    grpo-single on one GPU: torch.cuda.max_memory_allocated next to the resolver's estimate, as a table
    for docs/sharding.md (bench/calibrate_memory.py).

Every case is skipped, with the reason printed, when what is left of the time budget (default 390 s,
models' builds counted) cannot hold it; the last lines name what was skipped and the command that
runs it. vLLM cannot be brought to the GPU machine (its wheels are too large to carry), so rollouts
and endpoints run on the built-in server; the output says so. `--dry-run` (and a machine without
CUDA) runs the same code paths on the CPU at toy sizes (tests/bench/test_gpu_calibrate.py).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import calibrate_endpoint, calibrate_grpo, calibrate_memory  # noqa: E402
from bench.calibrate_kit import Case, Context  # noqa: E402

PARTS = ("grpo", "server-check", "endpoint", "memory")
DEFAULT_BUDGET_S = 390.0  # the first call on the GPU machine must end within 8 minutes, its start included
# Models are kept here between calls: a second call on a machine still warm does not build them again.
DEFAULT_MODELS = Path(tempfile.gettempdir()) / "gpu-calibrate-models"
VLLM_NOTE = ("vLLM: not on this machine (its wheels are too large to carry to the GPU machine); rollouts and "
             "endpoints run on the built-in transformers server")


def all_cases(ctx: Context) -> list[Case]:
    """Every case, most valuable first: the GRPO hand-off on 0.6B (the issue's goal) and the server's
    batching, the same on 1.7B, an endpoint, then memory (shapes already built first, 8B last)."""
    def grpo(shape: str, way: str) -> Case:
        return Case("grpo", f"grpo:{shape}:{way}", 35.0 if shape == "qwen3-0.6b" else 40.0,
                    lambda c: calibrate_grpo.run_way(c, shape, way), needs=(shape,))

    cases = [grpo("qwen3-0.6b", "folded"), grpo("qwen3-0.6b", "full"), grpo("qwen3-0.6b", "unmerged"),
             Case("server-check", "server-check:qwen3-0.6b", 15.0,
                  lambda c: calibrate_grpo.server_check(c, "qwen3-0.6b"), needs=("qwen3-0.6b",)),
             grpo("qwen3-1.7b", "folded"), grpo("qwen3-1.7b", "full"),
             Case("endpoint", "endpoint:qwen3-0.6b", 85.0, lambda c: calibrate_endpoint.endpoint(c, "qwen3-0.6b"),
                  needs=("qwen3-0.6b",)),
             grpo("qwen3-1.7b", "unmerged")]
    for shape, method, engine, precision in calibrate_memory.cases():
        cases.append(Case("memory", f"memory:{shape}:{engine}:{precision}",
                          calibrate_memory.case_seconds(shape, method),
                          lambda c, a=(shape, method, engine, precision): calibrate_memory.run_case(c, *a),
                          needs=(shape,)))
    if ctx.dry_run:  # each code path once, at toy sizes. Left out for time: the unmerged way (its server
        # differs from the folded one's by its load spec alone; tests/trainer_worker/engines/test_grpo_engine.py
        # runs it) and the grpo memory cases (the child process of the sft ones running the grpo engine
        # of part (a); tests/bench/test_gpu_calibrate.py checks their plan and rows)
        keep = {"grpo:qwen3-0.6b:folded", "grpo:qwen3-0.6b:full", "server-check:qwen3-0.6b", "endpoint:qwen3-0.6b",
                "memory:qwen3-0.6b:sft-fsdp:bf16"}
        cases = [c for c in cases if c.name in keep]
    return cases


def header(ctx: Context) -> list[str]:
    import torch
    import transformers

    if ctx.device == "cuda":
        props = torch.cuda.get_device_properties(0)
        where = f"{props.name}, {props.total_memory / 1024**3:.0f} GiB"
    else:
        where = "CPU (dry run: toy shapes, the same code paths)"
    versions = f"python {platform.python_version()}, torch {torch.__version__}, transformers {transformers.__version__}"
    try:
        import peft
        import trl

        versions += f", peft {peft.__version__}, trl {trl.__version__}"
    except ImportError as missing:
        versions += f" ({missing.name} missing)"
    budget = f"budget {ctx.budget_s:.0f}s" if ctx.budget_s != float("inf") else "no time budget"
    return [f"gpu calibrate: {where}; {versions}; {budget}",
            VLLM_NOTE if not _vllm_installed() else "vLLM: installed, but these measurements use the built-in server"]


def _vllm_installed() -> bool:
    from shared.serving.backends import vllm_installed

    return vllm_installed()


def run_cases(ctx: Context, cases: list[Case]) -> tuple[list[Case], list[Case]]:
    """Run each case that the budget still holds; returns (skipped, failed)."""
    skipped, failed = [], []
    for case in cases:
        needs = case.seconds + ctx.build_seconds(case.needs)
        if needs > ctx.left_s():
            print(f"SKIP {case.name}: {max(0.0, ctx.left_s()):.0f}s of the budget left, it needs about {needs:.0f}s"
                  + (" with its model's build" if ctx.build_seconds(case.needs) else ""), flush=True)
            skipped.append(case)
            continue
        started = time.perf_counter()
        try:
            ctx.results.append(case.run(ctx))
            # the estimates above are guesses until a GPU run replaces them with these
            print(f"  took {time.perf_counter() - started:.0f}s (about {needs:.0f}s estimated)", flush=True)
        except Exception as error:  # a failing case is reported; the others still run
            traceback.print_exc(file=sys.stderr)
            print(f"FAIL {case.name}: {type(error).__name__}: {str(error)[:400]}", flush=True)
            ctx.results.append({"part": case.part, "name": case.name, "failed": f"{type(error).__name__}: {error}"})
            failed.append(case)
    return skipped, failed


def closing(ctx: Context, cases: list[Case], skipped: list[Case], failed: list[Case]) -> list[str]:
    lines = calibrate_grpo.comparison(ctx.results)
    memory = [r["memoryRow"] for r in ctx.results if "memoryRow" in r]
    memory += [r for r in ctx.results if r.get("part") == "memory" and "failed" not in r]
    if memory:
        lines += ["memory table (docs/sharding.md):", *calibrate_memory.HEADER,
                  *(calibrate_memory.row(r) for r in memory)]
    ran = len(cases) - len(skipped) - len(failed)
    lines.append(f"gpu calibrate on {ctx.device}: {ran} ran, {len(failed)} failed, {len(skipped)} skipped "
                 f"in {time.perf_counter() - ctx.started:.0f}s")
    if skipped:
        names = ",".join(c.name for c in skipped)
        lines.append(f"skipped for time: {len(skipped)} case(s); to run them: bash bench/gpu_run.sh gpu-calibrate-2 "
                     f"python bench/gpu_calibrate.py --cases {names}")
    return lines


def main(argv: list[str]) -> int:
    if argv[:1] == ["--memory-case"]:
        return calibrate_memory.child(argv[1])
    parser = argparse.ArgumentParser(description="Calibrate GRPO, an endpoint and the memory estimate on one GPU.")
    parser.add_argument("--dry-run", action="store_true", help="run on CPU at toy sizes even where CUDA is")
    parser.add_argument("--budget-s", type=float, default=None,
                        help=f"seconds the cases may take, models' builds included (default {DEFAULT_BUDGET_S:.0f} on "
                             "CUDA, none in a dry run, whose cases are judged by their GPU durations)")
    parser.add_argument("--only", default=",".join(PARTS), help="comma-separated parts: " + ", ".join(PARTS))
    parser.add_argument("--cases", default=None, help="comma-separated case names (as a skipped run prints them); "
                                                      "overrides --only")
    parser.add_argument("--models", default=None,
                        help="where models are built and kept for a later call (default on CUDA: "
                             f"{DEFAULT_MODELS}; in a dry run: a temporary folder)")
    parser.add_argument("--out", default=None, help="write every figure as JSON here (default: $OUT/gpu-calibrate.json "
                                                    "where $OUT is set)")
    args = parser.parse_args(argv)
    parts = [p.strip() for p in args.only.split(",") if p.strip()]
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        parser.error(f"unknown parts: {', '.join(unknown)}")
    import torch

    device = "cuda" if torch.cuda.is_available() and not args.dry_run else "cpu"
    out = Path(args.out) if args.out else None
    if out is None and os.environ.get("OUT"):  # the GPU machine's folder whose files come back
        out = Path(os.environ["OUT"]) / "gpu-calibrate.json"
    with tempfile.TemporaryDirectory(prefix="gpu-calibrate-") as tmp:
        budget = args.budget_s
        if budget is None:
            budget = DEFAULT_BUDGET_S if device == "cuda" else float("inf")
        models = Path(args.models) if args.models else (DEFAULT_MODELS if device == "cuda" else Path(tmp) / "models")
        ctx = Context(device=device, work=Path(tmp), budget_s=budget, models=models)
        for text in header(ctx):
            print(text, flush=True)
        cases = all_cases(ctx)
        wanted = [n.strip() for n in args.cases.split(",") if n.strip()] if args.cases else None
        if wanted is not None:
            unknown = sorted(set(wanted) - {c.name for c in cases})
            if unknown:
                parser.error(f"unknown cases: {', '.join(unknown)}")
        cases = [c for c in cases if (c.name in wanted if wanted is not None else c.part in parts)]
        skipped, failed = run_cases(ctx, cases)
        for text in closing(ctx, cases, skipped, failed):
            print(text, flush=True)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"device": device, "results": ctx.results,
                                   "skipped": [c.name for c in skipped]}, indent=2, default=str) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
