"""bench/gpu_calibrate.py, part (a): GRPO with the built-in rollout server, the three hand-off ways.

Each way is one run of the real engine (engines/grpo.run_grpo, in this process, as bench/gpu_check.py
runs it) over a Qwen3-shaped model in bf16, differing only in its rollout server (bench/grpo_handoff.py
WAYS): `folded` (the adapter's bytes, folded into the server's weights: what the engine does),
`unmerged` (the adapter's bytes, served through PEFT's LoRA layers) and `full` (every merged weight).
Per way: the median step split (generation, hand-off, scoring, update) over the steps after the
first (which hands nothing over), hand-off bytes, the trainer's peak GPU memory
(torch.cuda.max_memory_allocated) and the GPU's peak memory in use (trainer and rollout server),
the rollout requests each step made, and the goal: hand-off <= 0.5 s and <= 5% of the step.

`server_check` runs the built-in server's own generation code (shared.serving.generation.Generator)
on the device with a hook on the decoder: a batch of prompts must be one forward pass over the
prompts and then one pass per new token over that token alone (the KV cache holding the rest).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

from bench.calibrate_kit import PROMPTS, Context, DevicePeak, free_cuda, gib

GOAL_HANDOFF_S = 0.5
GOAL_HANDOFF_SHARE = 0.05
# A step: 2 prompts x 8 completions of up to 64 tokens, LoRA rank 16 on every linear layer.
STEP = {"batch": 16, "generations": 8, "completion_tokens": 64, "rank": 16}
DRY_STEP = {"batch": 8, "generations": 4, "completion_tokens": 8, "rank": 8}


def measured_steps(ctx: Context) -> int:
    return 3 if not ctx.dry_run else 1


def run_way(ctx: Context, shape_name: str, way: str) -> dict[str, Any]:
    import torch

    from bench.grpo_handoff import WAYS, grpo_plan, run, summary

    model_dir = ctx.model(shape_name)
    shape = ctx.shape(shape_name)
    steps = measured_steps(ctx)
    sizes = DRY_STEP if ctx.dry_run else STEP
    plan = grpo_plan(steps, precision=ctx.precision, model=f"bench/{shape.name}", **sizes)
    dataset = ctx.work / "grpo-prompts.jsonl"
    dataset.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in PROMPTS))
    free_cuda()
    allocated_before = torch.cuda.memory_allocated() if ctx.device == "cuda" else 0
    started = time.perf_counter()
    with DevicePeak(ctx.device) as device_peak:
        points, server = run(f"{shape.name}-{way}", WAYS[way], model_dir, dataset, ctx.work / "grpo", steps,
                             plan=plan, device=ctx.slot, quiet=True)
    trainer_peak = torch.cuda.max_memory_allocated() - allocated_before if ctx.device == "cuda" else None
    spec = json.loads((server.work_dir / "load_spec.json").read_text())
    figures = summary(points)
    figures["rewardSeconds"] = sorted(p["rewardSeconds"] for p in points)[len(points) // 2]
    per_step = Counter(step for step, _, _ in server.requests)
    shapes = sorted({(prompts, n) for _, prompts, n in server.requests})
    share = figures["handoffSeconds"] / figures["stepSeconds"]
    met = figures["handoffSeconds"] <= GOAL_HANDOFF_S and share <= GOAL_HANDOFF_SHARE
    result = {
        "part": "grpo", "shape": shape.name, "way": way, "steps": [p["step"] for p in points], **figures,
        "handoffShare": share, "goalMet": met, "trainerPeakBytes": trainer_peak,
        "devicePeakAddedBytes": device_peak.added_bytes, "requestsPerStep": sorted(set(per_step.values())),
        "requestShapes": shapes, "serverDevice": spec["device"], "adapterMode": spec["adapterMode"],
        "wallSeconds": time.perf_counter() - started,
    }
    if way == "folded" and trainer_peak is not None:  # a row of the memory table: this plan's estimate beside it
        result["memoryRow"] = memory_row(model_dir, shape, plan, trainer_peak, device_peak.added_bytes)
    print(line(result), flush=True)
    free_cuda()
    return result


def line(r: dict[str, Any]) -> str:
    requests = "/".join(map(str, r["requestsPerStep"]))
    shapes = ", ".join(f"{p} prompts x {n}" for p, n in r["requestShapes"])
    goal = "met" if r["goalMet"] else "NOT met"
    held = "every weight" if r["way"] == "full" else f"adapter {r['adapterMode']}"
    return (f"grpo {r['shape']} {r['way']:<8} step {r['stepSeconds']:.3f}s = generation {r['generationSeconds']:.3f}"
            f" + hand-off {r['handoffSeconds']:.3f} ({r['handoffBytes'] / 1e6:.1f} MB) + reward "
            f"{r['rewardSeconds']:.3f} + update {r['updateSeconds']:.3f}; peak GPU memory: trainer "
            f"{gib(r['trainerPeakBytes'])} GiB, device {gib(r['devicePeakAddedBytes'])} GiB; {requests} rollout "
            f"request(s) a step ({shapes}) to a server on {r['serverDevice']} ({held}); goal "
            f"(hand-off <= {GOAL_HANDOFF_S} s and <= {GOAL_HANDOFF_SHARE:.0%} of the step): {goal} "
            f"({r['handoffShare']:.1%})")


def comparison(results: list[dict[str, Any]]) -> list[str]:
    """For each shape with all three ways measured: each way against the folded one."""
    lines = []
    for shape in dict.fromkeys(r["shape"] for r in results if r.get("part") == "grpo" and "way" in r):
        ways = {r["way"]: r for r in results if r.get("part") == "grpo" and r.get("shape") == shape and "way" in r}
        if "folded" not in ways:
            continue
        base = ways["folded"]
        for way in ("unmerged", "full"):
            if way in ways:
                r = ways[way]
                lines.append(f"grpo {shape} {way} / folded: hand-off bytes "
                             f"{r['handoffBytes'] / base['handoffBytes']:.1f}x, "
                             f"hand-off {r['handoffSeconds'] / base['handoffSeconds']:.1f}x, generation "
                             f"{r['generationSeconds'] / base['generationSeconds']:.2f}x, step "
                             f"{r['stepSeconds'] / base['stepSeconds']:.2f}x")
    return lines


def server_check(ctx: Context, shape_name: str) -> dict[str, Any]:
    """The built-in server's Generator on the device: one batch, then the KV cache."""
    import torch

    from shared.models.load_spec import LoadSpec, load_model, model_generation_config
    from shared.serving.generation import Generator, SamplingParams

    model_dir = ctx.model(shape_name)
    spec = LoadSpec(model=f"bench/{shape_name}", model_dir=str(model_dir), dtype=ctx.precision,
                    generation_config=model_generation_config(model_dir), batch_invariant=True,
                    served_model_name="base", device=ctx.device)
    deterministic = torch.are_deterministic_algorithms_enabled()
    try:
        generator = Generator(*load_model(spec), spec)
        passes: list[tuple[int, int, str]] = []

        def record(module, args, kwargs):
            tensor = kwargs.get("input_ids") if kwargs.get("input_ids") is not None else kwargs["inputs_embeds"]
            passes.append((*tuple(tensor.shape[:2]), tensor.device.type))

        sizes = DRY_STEP if ctx.dry_run else STEP
        prompts = [generator.encode_prompt(p) for p in PROMPTS[:sizes["batch"] // sizes["generations"]]]
        params = SamplingParams.from_request({"temperature": 1.0, "top_k": -1, "top_p": 1.0, "repetition_penalty": 1.0,
                                              "max_tokens": sizes["completion_tokens"], "n": sizes["generations"],
                                              "seed": 1}, generator.defaults)
        generator.generate_many(prompts, params, "base")  # warm-up: kernels chosen, allocator grown
        hook = generator.model.get_decoder().register_forward_pre_hook(record, with_kwargs=True)
        started = time.perf_counter()
        try:
            groups = generator.generate_many(prompts, params, "base")
        finally:
            hook.remove()
        seconds = time.perf_counter() - started
    finally:
        torch.use_deterministic_algorithms(deterministic)  # load_model's process-wide switch
        generator = None
        free_cuda()
    rows = len(prompts) * sizes["generations"]
    width = max(map(len, prompts))
    tokens = sum(len(one.token_ids) for group in groups for one in group)
    ok = (passes[0][:2] == (rows, width) and all(p[:2] == (rows, 1) for p in passes[1:])
          and {p[2] for p in passes} == {ctx.device})
    result = {"part": "server-check", "shape": ctx.shape(shape_name).name, "passes": len(passes),
              "first": passes[0][:2], "later": sorted({p[:2] for p in passes[1:]}), "device": passes[0][2],
              "batchedAndCached": ok, "seconds": seconds, "tokens": tokens}
    print(f"server-check {result['shape']}: the built-in server's generation of {len(prompts)} prompts x "
          f"{sizes['generations']} on {result['device']}: 1 pass over {result['first']} tokens, then "
          f"{len(passes) - 1} over {', '.join(map(str, result['later']))}: one batch and the KV cache: "
          f"{'yes' if ok else 'NO'}; {tokens} tokens in {seconds:.2f}s ({tokens / seconds:.0f} tokens/s)", flush=True)
    return result


def memory_row(model_dir, shape, plan, peak: int, device_peak: int | None) -> dict[str, Any]:
    """What bench/calibrate_memory.row prints, for this part's run (its own plan: a rank-16 adapter,
    2 prompts x 8 completions of 64 tokens)."""
    import torch

    from bench.calibrate_kit import GIB
    from services.trainer_worker.engines.rollout_sizes import model_facts
    from shared.planning.resolver import trainer_memory_gib, training_memory_gib

    facts = model_facts(model_dir, parameters=shape.parameters())
    trainer = trainer_memory_gib(plan, model=facts)
    return {"shape": shape.name, "method": "grpo", "engine": "grpo-single (part a)", "precision": plan.precision,
            "trainerEstimateGiB": trainer, "estimateGiB": training_memory_gib(plan, model=facts), "peakBytes": peak,
            "reservedBytes": torch.cuda.max_memory_reserved(), "devicePeakAddedBytes": device_peak,
            "measuredOverEstimate": peak / GIB / trainer}
