"""bench/platform_overhead.py runs on a tiny setting and prints its figures (a benchmark, not a
timed test: no figure is checked against its goal here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_the_overhead_benchmark_runs_on_a_tiny_setting_and_prints_its_figures(tmp_path):
    out = tmp_path / "overhead.json"
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "platform_overhead.py"), "--shape", "tiny", "--trials", "1",
         "--steps", "3", "--warmup", "1", "--configs", "sft:1,sft:2,grpo:1", "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    printed = json.loads(done.stdout[done.stdout.index("{\n"):])
    assert set(printed["results"]) == {"sft:1", "sft:2", "grpo:1"}
    for name, figures in printed["results"].items():
        assert figures["p1"]["measure"] == ("tokensPerSecond" if name.startswith("sft") else "stepsPerSecond")
        assert figures["p1"]["bare"] > 0 and figures["p1"]["trainer"] > 0 and figures["p1"]["ratio"] > 0
        assert set(figures["stackCpuShare"]) == {"bare", "trainer"}
        assert figures["p2"]["bareSeconds"] > 0 and figures["p2"]["trainerSeconds"] > 0
        # where the trainer's start-up seconds go, phase by phase, from the claim and the run's events
        phases = figures["p2"]["trainerPhases"]
        assert {"api", "queue", "dispatch", "workerStart", "firstStep"} <= set(phases)
        assert sum(phases.values()) == pytest.approx(figures["p2"]["trainerSeconds"], abs=0.05)
    saved = json.loads(out.read_text())
    assert len(saved["results"]["sft:1"]["trials"]) == 1  # the file keeps every trial
