"""The GPU check (not a test): `python bench/gpu_check.py [--dry-run] [--checks NAME,...] [--steps N]
[--parallel N] [--deadline S]`; on the lent GPU machine through `bash bench/gpu_run.sh` (docs/gpu-check.md).

Runs the project's own engines (services/trainer_worker/engines, through `engines.train` and
`distributed.run_distributed`, as the worker does; jobs and reporter are the engine tests' doubles)
and its built-in serving process on one CUDA GPU, with nothing downloaded: the model is built here
from a config (on CUDA a ~100M-parameter Qwen3-style model, bench/grpo_handoff.py `build_model`; in
a dry run the built-in tiny model; `tokens-per-second-8b` builds the Qwen3-8B shape on the GPU,
bench/gpu_qwen3_8b.py). Each check runs in a process of its own with a time limit
(bench/gpu_isolation.py): the tokens/s checks first, alone, then the others together. Each prints
its log and one line (`PASS`, `FAIL` or `SKIP`, its name, its seconds, what it measured), then all
the lines again and a summary; the exit code is 1 when a check failed.

Without CUDA, or with `--dry-run`, the same checks run on one CPU slot at tiny sizes, and the checks
only a GPU can make are reported as skipped with the reason.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import requests  # noqa: E402

from bench.gpu_isolation import CUDA_DEADLINE_S, Outcome, Runner, line  # noqa: E402
from bench.gpu_throughput import TimedReporter, bare_sft_run, engine_tokens_per_second  # noqa: E402
from services.trainer_worker.engines import train  # noqa: E402
from services.trainer_worker.engines.base import Restore, read_manifest  # noqa: E402
from services.trainer_worker.engines.distributed import run_distributed  # noqa: E402
from shared.models.tiny_models import SAMPLE_DATASET, ensure_builtin  # noqa: E402
from shared.store.artifacts import ArtifactRoot  # noqa: E402
from tests.shared.plans.plan_fixtures import amended  # noqa: E402
from tests.trainer_worker.doubles import RecordingReporter, adapter_tensors, make_job, max_abs_diff  # noqa: E402
from tests.trainer_worker.grpo_doubles import grpo_job, toy_answer, write_toy_dataset  # noqa: E402

# A trainingState branch must end on the uninterrupted run's adapter: to 1e-6 on CPU (SPEC 3.3);
# on CUDA the same kernels run in the same order, but cuBLAS may pick other algorithms between
# processes, so fp32 agreement to 1e-5 is asked for.
RESUME_TOLERANCE = {"cpu": 1e-6, "cuda": 1e-5}
MIN_SPEED_RATIO = 0.8  # the engine's tokens/s must be at least this share of a bare TRL script's
SHARDED_FORMAT = "hf-trainer-fsdp2-dcp"
SERVING_READY_S = 120.0


@dataclass
class Setup:
    device: str  # "cuda" or "cpu"
    model_dir: Path
    work: Path
    steps: int

    @property
    def slot(self) -> str:
        return "cuda:0" if self.device == "cuda" else "cpu:0"

    def sft_job(self, name: str, *, precision: str = "fp32", engine: str | None = None, **hyper):
        job = make_job(self.model_dir, self.work / name, run_id=f"run-check-{name}", engine=engine,
                       maxSteps=self.steps, **{"every_steps": None, **hyper})
        job.plan = amended(job.plan, {"precision": precision})
        job.devices = [self.slot]
        return job


def _losses(reporter: RecordingReporter) -> list[float]:
    return [p["loss"] for p in reporter.points if "loss" in p]


def _trained(result, reporter, steps: int) -> str | None:
    """Why a run did not train as it should (None: it did)."""
    losses = _losses(reporter)
    if result.final_step != steps:
        return f"ended at step {result.final_step} of {steps}"
    if not losses or not all(math.isfinite(x) for x in losses):
        return f"losses not finite: {losses}"
    return None


def check_sft(setup: Setup, precision: str) -> Outcome:
    if precision == "fp16" and setup.device != "cuda":
        return Outcome("SKIP", "fp16 mixed precision trains only on CUDA (the HF Trainer's fp16 needs a GPU)")
    reporter = RecordingReporter()
    started = time.perf_counter()
    result = train(setup.sft_job(f"sft-{precision}", precision=precision), reporter)
    problem = _trained(result, reporter, setup.steps)
    losses = _losses(reporter)
    detail = (f"{setup.steps} steps in {precision}, loss {losses[0]:.3f} -> {losses[-1]:.3f}, "
              f"{time.perf_counter() - started:.1f}s")
    return Outcome("FAIL", f"{detail}: {problem}") if problem else Outcome("PASS", detail)


def check_grpo(setup: Setup) -> Outcome:
    answer, _ = toy_answer(setup.model_dir)
    dataset = write_toy_dataset(setup.work / "grpo-prompts.jsonl", answer)
    job = grpo_job(setup.model_dir, setup.work / "grpo", dataset, maxSteps=setup.steps, batchSize=8,
                   run_id="run-check-grpo")
    job.plan = amended(job.plan, {"grpo": {"numGenerations": 4, "maxCompletionLength": 4}})
    job.devices = [setup.slot]
    reporter = RecordingReporter()
    result = train(job, reporter)
    handed = [p.get("handoffBytes", 0) for p in reporter.points]
    server = next((m for _, m in reporter.events if "rollouts from a serving process" in m), "")
    if result.final_step != setup.steps or not any(handed[1:]):
        return Outcome("FAIL", f"ended at step {result.final_step} of {setup.steps}, hand-offs {handed}")
    backend = "built-in" if "vllm" not in server.lower() else "vllm"
    return Outcome("PASS", f"{setup.steps} steps, {backend} rollout server, adapter hand-off "
                           f"{max(handed) / 1e6:.2f} MB, reward {reporter.points[-1].get('reward', float('nan')):.2f}")


def check_endpoint(setup: Setup) -> Outcome:
    """The built-in serving process over the base model and an adapter trained here, answering."""
    from shared.models.load_spec import LoadSpec, model_generation_config
    from shared.serving.backends import BuiltinBackend

    reporter = RecordingReporter()
    train(setup.sft_job("endpoint-adapter", every_steps=setup.steps), reporter)
    adapter = reporter.snapshot_at(setup.steps) / "adapter"
    spec = LoadSpec(model="builtin/tiny-qwen3", model_dir=str(setup.model_dir), dtype="fp32",
                    generation_config=model_generation_config(setup.model_dir), batch_invariant=True,
                    served_model_name="base", adapters={"check": str(adapter)}, device=setup.device)
    from shared.process.ports import free_port

    port, work = free_port(), setup.work / "endpoint"
    work.mkdir(parents=True, exist_ok=True)
    argv, env = BuiltinBackend(devices=[setup.slot]).command(spec, port=port, spec_path=spec.write(work / "spec.json"))
    with open(work / "server.log", "wb") as log:
        proc = subprocess.Popen(argv, cwd=ROOT, env={**os.environ, **env, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))},
                                stdout=subprocess.DEVNULL, stderr=log)
    try:
        started = time.perf_counter()
        while time.perf_counter() - started < SERVING_READY_S:
            if proc.poll() is not None:
                return Outcome("FAIL", f"the serving process exited with {proc.returncode}")
            try:
                if requests.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                time.sleep(0.2)
        ready = time.perf_counter() - started
        answered = time.perf_counter()
        reply = requests.post(f"http://127.0.0.1:{port}/v1/chat/completions", timeout=120, json={
            "model": "check", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 8})
        if reply.status_code != 200:
            return Outcome("FAIL", f"/v1/chat/completions answered {reply.status_code}: {reply.text[:200]}")
        usage = reply.json().get("usage") or {}
        return Outcome("PASS", f"built-in server ready in {ready:.1f}s, adapter answered "
                               f"{usage.get('completion_tokens', '?')} tokens in {time.perf_counter() - answered:.2f}s")
    finally:
        proc.terminate()
        proc.wait(30)


def check_resume(setup: Setup) -> Outcome:
    half = setup.steps // 2
    whole = RecordingReporter()
    train(setup.sft_job("resume-whole", every_steps=half, warmupSteps=1), whole)
    branch = RecordingReporter()
    job = setup.sft_job("resume-branch", every_steps=half, warmupSteps=1)
    job.restore = Restore("trainingState", whole.snapshot_at(half))
    train(job, branch)
    diff = max_abs_diff(adapter_tensors(whole.snapshot_at(setup.steps)), adapter_tensors(branch.snapshot_at(setup.steps)))
    tolerance = RESUME_TOLERANCE[setup.device]
    detail = (f"trainingState branch of step {half} ends at step {setup.steps}: adapter max abs diff "
              f"{diff:.3g} (tolerance {tolerance:g})")
    return Outcome("PASS" if diff <= tolerance else "FAIL", detail)


def check_sharded(setup: Setup) -> Outcome:
    reporter = RecordingReporter()
    job = setup.sft_job("sharded", engine="sft-fsdp", every_steps=setup.steps)
    result = run_distributed(job, reporter)  # one rank: FSDP2 over a world of one, as on a node
    problem = _trained(result, reporter, setup.steps)
    state = read_manifest(reporter.snapshot_at(setup.steps)).get("trainingState") or {}
    if problem is None and state.get("format") != SHARDED_FORMAT:
        problem = f"training state format {state.get('format')}, not {SHARDED_FORMAT}"
    losses = _losses(reporter)
    detail = f"sft-fsdp on 1 {setup.device} rank, {setup.steps} steps, loss {losses[0]:.3f} -> {losses[-1]:.3f}"
    return Outcome("FAIL", f"{detail}: {problem}") if problem else Outcome("PASS", f"{detail}, state {SHARDED_FORMAT}")


def check_speed(setup: Setup) -> Outcome:
    """The engine against a bare TRL script with the same settings (fp32, the engine's activation
    checkpointing choice): what a run through the engine costs on top of TRL's own loop."""
    from shared.models.loading import load_causal_lm, load_tokenizer

    reporter = TimedReporter()
    job = setup.sft_job("speed")
    train(job, reporter)
    ours = engine_tokens_per_second(reporter)
    checkpointing = any(m.startswith("activation checkpointing on") for _, m in reporter.events)
    hp, adapter = job.plan.hyperparameters, job.plan.adapter
    rows = [json.loads(line) for line in SAMPLE_DATASET.read_text().splitlines() if line.strip()]
    bare = bare_sft_run(
        model=load_causal_lm(setup.model_dir, "fp32", device="cuda" if setup.device == "cuda" else "cpu"),
        tokenizer=load_tokenizer(setup.model_dir), rows=rows, work=setup.work / "bare-trl", device=setup.device,
        config=dict(max_steps=setup.steps, per_device_train_batch_size=int(hp.batch_size),
                    learning_rate=float(hp.learning_rate), max_length=int(hp.max_seq_length),
                    seed=int(hp.seed), dataloader_num_workers=0, bf16=False, fp16=False,
                    gradient_checkpointing=checkpointing),  # as the engine, where TRL's defaults differ
        peft=dict(r=int(adapter.rank), lora_alpha=int(adapter.alpha), lora_dropout=0.0,
                  target_modules="all-linear"),
    ).tokens_per_second
    ratio = ours / bare
    detail = (f"engine {ours:.0f} tokens/s, bare TRL {bare:.0f} tokens/s, ratio {ratio:.2f}, "
              f"activation checkpointing {'on' if checkpointing else 'off'} on both")
    if setup.device != "cuda":  # a shared CPU's step times swing several-fold between runs
        return Outcome("PASS", f"{detail} (on CPU the ratio is reported, not judged)")
    return Outcome("PASS" if ratio >= MIN_SPEED_RATIO else "FAIL", f"{detail} (at least {MIN_SPEED_RATIO})")


def check_speed_8b(setup: Setup) -> Outcome:
    from bench.gpu_qwen3_8b import check_8b

    return Outcome(*check_8b(setup.device, setup.work, say=lambda text: print(text, flush=True)))


CHECKS: dict[str, Callable[[Setup], Outcome]] = {
    "sft-bf16": lambda s: check_sft(s, "bf16"),
    "sft-fp16": lambda s: check_sft(s, "fp16"),
    "grpo": check_grpo,
    "endpoint": check_endpoint,
    "resume": check_resume,
    "sharded": check_sharded,
    "tokens-per-second": check_speed,
    "tokens-per-second-8b": check_speed_8b,
}
ALONE = ("tokens-per-second-8b", "tokens-per-second")  # they time the GPU: nothing else runs meanwhile


def summary(device: str, outcomes: dict[str, Outcome], seconds: float) -> str:
    counts = {s: sum(o.status == s for o in outcomes.values()) for s in ("PASS", "FAIL", "SKIP")}
    return (f"gpu check on {device}: {counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped "
            f"in {seconds:.0f}s")


def cuda_model(work: Path) -> Path:
    """The ~100M Qwen3-style model of bench/grpo_handoff.py, built here with random weights."""
    from bench.grpo_handoff import build_model

    target = work / "qwen3-100m"
    build_model(target)
    return target


# --- Each check in a process of its own


def child(name: str, setup: Setup, result: Path) -> None:
    """Run one check in this process and write its outcome to `result` (a check that raises fails)."""
    try:
        outcome = CHECKS[name](setup)
    except Exception as error:
        traceback.print_exc()
        outcome = Outcome("FAIL", f"{type(error).__name__}: {str(error)[:300]}")
    result.write_text(json.dumps({"status": outcome.status, "detail": outcome.detail}))


def plan_order(names: list[str]) -> tuple[list[str], list[str]]:
    """(the checks that time the GPU, each alone, first; the others, which may share it)."""
    return [n for n in names if n in ALONE], [n for n in names if n not in ALONE]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Check the engines on one CUDA GPU (or dry-run them on CPU).")
    parser.add_argument("--dry-run", action="store_true", help="run on CPU at tiny sizes even where CUDA is")
    parser.add_argument("--checks", default=",".join(CHECKS), help="comma-separated subset of: " + ", ".join(CHECKS))
    parser.add_argument("--steps", type=int, default=None, help="steps per run (default 20 on CUDA, 6 on CPU)")
    parser.add_argument("--parallel", type=int, default=None,
                        help="checks that share the device at once (default 6 on CUDA, 1 on CPU); the "
                             "tokens/s checks always run alone")
    parser.add_argument("--deadline", type=float, default=None,
                        help=f"seconds for the whole check (default {CUDA_DEADLINE_S:.0f} on CUDA, none on CPU): a "
                             "check still running then is stopped, one not started is skipped")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # internal: run this one check here
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    import torch

    device = "cuda" if torch.cuda.is_available() and not args.dry_run else "cpu"
    steps = args.steps or (20 if device == "cuda" else 6)
    if args.child:
        child(args.child, Setup(device=device, model_dir=args.model_dir, work=args.work, steps=steps),
              args.work / "result.json")
        return 0
    names = [n.strip() for n in args.checks.split(",") if n.strip()]
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        parser.error(f"unknown checks: {', '.join(unknown)}")
    parallel = args.parallel or (6 if device == "cuda" else 1)
    deadline = args.deadline or (CUDA_DEADLINE_S if device == "cuda" else None)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model_dir = cuda_model(work) if device == "cuda" else ensure_builtin("tiny-qwen3", ArtifactRoot(work / "a"))
        where = torch.cuda.get_device_name(0) if device == "cuda" else "CPU (dry run: tiny model, CUDA-only checks skipped)"
        print(f"gpu check: {where}, {steps} steps per run, {parallel} check(s) at once"
              + (f", {deadline:.0f}s deadline" if deadline else ""), flush=True)
        runner = Runner(device=device, work=work, model_dir=model_dir, steps=steps, dry_run=args.dry_run,
                        ends_at=None if deadline is None else started + deadline)
        alone, shared = plan_order(names)
        runner.run(alone, at_once=1)
        runner.run(shared, at_once=parallel)
    print("results:", flush=True)
    for name in names:
        print(line(name, runner.outcomes[name], runner.seconds[name]), flush=True)
    print(summary(device, runner.outcomes, time.perf_counter() - started), flush=True)
    return 1 if any(o.status == "FAIL" for o in runner.outcomes.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
