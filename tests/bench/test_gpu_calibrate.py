"""bench/gpu_calibrate.py's CPU dry run: every part runs its code paths at toy sizes and prints its
lines (a benchmark, not a timed test: no figure is checked against a goal here), and a budget too
small for a case skips it with the reason and the command that runs it later."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = [sys.executable, "bench/gpu_calibrate.py", "--dry-run"]
VLLM_NOTE = ("vLLM: not on this machine (its wheels are too large to carry to the GPU machine); rollouts and "
             "endpoints run on the built-in transformers server")


def cells(row: str) -> list[str]:
    return row.strip("| ").split(" | ")


def test_the_dry_run_runs_every_part_and_prints_its_figures(tmp_path):
    out = tmp_path / "calibrate.json"
    done = subprocess.run([*SCRIPT, "--out", str(out), "--models", str(tmp_path / "models")], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert lines[0].startswith("gpu calibrate: CPU (dry run: toy shapes, the same code paths); python ")
    assert lines[0].endswith("; no time budget") and lines[1] == VLLM_NOTE
    grpo = {way: next(line for line in lines if line.startswith(f"grpo tiny-0.6b {way} "))
            for way in ("folded", "full")}
    assert "1 rollout request(s) a step (2 prompts x 4) to a server on cpu (adapter folded)" in grpo["folded"]
    assert "to a server on cpu (every weight)" in grpo["full"]
    for line in grpo.values():
        assert re.search(r"step [\d.]+s = generation [\d.]+ \+ hand-off [\d.]+ \([\d.]+ MB\) \+ reward [\d.]+ \+ "
                         r"update [\d.]+; peak GPU memory: trainer n/a GiB, device n/a GiB; ", line), line
        assert re.search(r"goal \(hand-off <= 0.5 s and <= 5% of the step\): (met|NOT met) \([\d.]+%\)$", line), line
    check = next(line for line in lines if line.startswith("server-check tiny-0.6b: "))
    assert "1 pass over (8, " in check and "then 7 over (8, 1): one batch and the KV cache: yes;" in check
    assert any(line.startswith("endpoint tiny-0.6b: built-in serving process READY in ") for line in lines)
    rows = [line for line in lines if line.startswith(("| base |", "| adapter |"))]
    assert [cells(row)[:2] for row in rows] == [
        [model, how] for model in ("base", "adapter") for how in ("built-in server",) * 2 + ("bare generate",) * 2]
    assert "grpo tiny-0.6b full / folded: hand-off bytes " in done.stdout
    table = lines.index("memory table (docs/sharding.md):")
    assert cells(lines[table + 3])[:4] == ["tiny-0.6b", "sft", "sft-fsdp", "bf16"]
    assert lines[-1].startswith("gpu calibrate on cpu: 5 ran, 0 failed, 0 skipped in ")

    results = json.loads(out.read_text())["results"]
    ways = {r["way"]: r for r in results if r["part"] == "grpo"}
    assert ways["folded"]["adapterMode"] == "folded" and ways["folded"]["requestsPerStep"] == [1]
    assert ways["full"]["handoffBytes"] > ways["folded"]["handoffBytes"] > 0
    memory = [r for r in results if r["part"] == "memory"]
    assert [(r["finalStep"], r["engine"]) for r in memory] == [(2, "sft-fsdp")]
    assert memory[0]["peakBytes"] > 0 and memory[0]["trainerEstimateGiB"] > 0
    assert (tmp_path / "models" / "tiny-0.6b" / "built.json").is_file()  # kept for a later call


def test_a_budget_too_small_skips_each_case_saying_why_and_how_to_run_it():
    done = subprocess.run([*SCRIPT, "--budget-s", "0", "--only", "server-check,memory"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert lines[2] == ("SKIP server-check:qwen3-0.6b: 0s of the budget left, it needs about 35s with its "
                        "model's build")
    assert lines[-2].startswith("gpu calibrate on cpu: 0 ran, 0 failed, 2 skipped in ")
    assert lines[-1] == ("skipped for time: 2 case(s); to run them: bash bench/gpu_run.sh gpu-calibrate-2 python "
                         "bench/gpu_calibrate.py --cases server-check:qwen3-0.6b,memory:qwen3-0.6b:sft-fsdp:bf16")


def test_unknown_parts_and_cases_are_refused_by_name():
    done = subprocess.run([*SCRIPT, "--only", "grpo,warp"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "unknown parts: warp" in done.stderr
    done = subprocess.run([*SCRIPT, "--cases", "grpo:qwen3-0.6b:folded,grpo:qwen3-9b:x"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "unknown cases: grpo:qwen3-9b:x" in done.stderr


def test_the_grpo_memory_cases_plan_is_one_the_engine_and_the_resolver_take(tmp_path):
    """The dry run leaves the grpo memory cases out for time: their plan and prompts, checked here
    the way the engine checks them at start, and the estimates their row prints."""
    sys.path.insert(0, str(REPO))
    from bench.calibrate_memory import plan_of, write_dataset
    from services.trainer_worker.engines import grpo
    from services.trainer_worker.engines.base import TrainingJob
    from shared.planning.resolver import trainer_memory_gib, training_memory_gib

    plan = plan_of("grpo", "bf16", "qwen3-8b")
    rows = grpo.load_prompt_rows(write_dataset("grpo", tmp_path / "prompts.jsonl"))
    assert len(rows) == 4 and all(len(r["prompt"].split()) == 190 for r in rows)
    grpo._check(TrainingJob("run-x", plan, "grpo-single", tmp_path, tmp_path / "prompts.jsonl", tmp_path, ["cuda:0"]))
    facts = {"parameters": 8_190_735_360, "hiddenSize": 4096, "layers": 36, "vocabSize": 151936}
    assert training_memory_gib(plan, model=facts) > trainer_memory_gib(plan, model=facts) > 15.0
