"""bench/memory_calibrate.py runs on the built-in tiny model and prints estimate, measured, ratio; a
calibration that measured nothing fails (a benchmark: only its shape and its refusals are checked)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench import memory_calibrate

REPO = Path(__file__).resolve().parents[2]


def test_a_tiny_case_prints_its_estimate_beside_its_measured_peak(tmp_path):
    out = tmp_path / "rows.json"
    done = subprocess.run([sys.executable, str(REPO / "bench" / "memory_calibrate.py"), "--only",
                           "tiny-qwen3 sft 1 slot", "--out", str(out)], cwd=REPO, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (row,) = json.loads(out.read_text())
    assert row["case"] == "tiny-qwen3 sft 1 slot" and row["measuredGiB"] > 0.1
    assert row["estimateGiB"] >= row["measuredGiB"] and row["ratio"] == round(row["estimateGiB"] / row["measuredGiB"], 2)
    assert "| tiny-qwen3 sft 1 slot |" in done.stdout


def test_a_calibration_that_measured_nothing_fails(monkeypatch, capsys):
    monkeypatch.setattr(memory_calibrate, "model_dirs", lambda tmp, smollm2: {"tiny-qwen3": tmp})
    monkeypatch.setattr(memory_calibrate, "measure", lambda case, tmp, model_dir: {"error": ["it crashed"]})
    assert memory_calibrate.main(["--only", "tiny-qwen3 sft 1 slot"]) == 1
    assert "nothing measured for: tiny-qwen3 sft 1 slot" in capsys.readouterr().err
    assert memory_calibrate.main(["--only", "no such case"]) == 1  # no case at all measures nothing too


def test_an_estimate_below_its_peak_fails(monkeypatch, capsys):
    monkeypatch.setattr(memory_calibrate, "model_dirs", lambda tmp, smollm2: {"tiny-qwen3": tmp})
    monkeypatch.setattr(memory_calibrate, "measure", lambda case, tmp, model_dir: {
        "estimateGiB": 0.5, "peakGiB": 0.6, "ranks": [{"rank": 0, "peakGiB": 0.6}]})
    assert memory_calibrate.main(["--only", "tiny-qwen3 sft 1 slot"]) == 2
    assert "estimate below the measured peak for: tiny-qwen3 sft 1 slot" in capsys.readouterr().err
