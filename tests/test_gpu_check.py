"""bench/gpu_check.py's CPU dry run: the checks it runs here pass, the CUDA-only one is reported as
skipped with its reason, one line each and the summary (the GPU run itself needs a CUDA node)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_the_dry_run_passes_and_says_what_it_skipped():
    # a subset, to stay short: one training run, the fp16 check (CUDA only), an exact resume
    done = subprocess.run([sys.executable, "bench/gpu_check.py", "--dry-run", "--steps", "4",
                           "--checks", "sft-bf16,sft-fp16,resume"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert lines[0] == "gpu check: CPU (dry run: tiny model, CUDA-only checks skipped), 4 steps per run"
    assert lines[1].startswith("PASS  sft-bf16           4 steps in bf16, loss ")
    assert lines[2] == ("SKIP  sft-fp16           fp16 mixed precision trains only on CUDA "
                        "(the HF Trainer's fp16 needs a GPU)")
    assert lines[3].startswith("PASS  resume             trainingState branch of step 2 ends at step 4: "
                               "adapter max abs diff ")
    assert lines[3].endswith(" (tolerance 1e-06)")
    assert lines[4].startswith("gpu check on cpu: 2 passed, 0 failed, 1 skipped in ")


def test_an_unknown_check_is_refused_by_name():
    done = subprocess.run([sys.executable, "bench/gpu_check.py", "--dry-run", "--checks", "sft-bf16,warp"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "unknown checks: warp" in done.stderr
