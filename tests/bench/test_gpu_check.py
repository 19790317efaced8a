"""bench/gpu_check.py's CPU dry run (the GPU run itself needs a CUDA node): the checks it runs here
pass, the CUDA-only one is reported as skipped with its reason, one line each, then the results in
the order asked and the summary; each check runs in a process of its own (bench/gpu_isolation.py),
so one that crashes or hangs fails alone and is stopped."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from bench.gpu_isolation import Runner

REPO = Path(__file__).resolve().parents[2]


def results(stdout: str) -> list[str]:
    """The lines after `results:` (each check's line in the order asked, then the summary)."""
    lines = stdout.splitlines()
    return lines[lines.index("results:") + 1:]


def test_the_dry_run_passes_and_says_what_it_skipped():
    # a subset, to stay short: one training run, the fp16 check (CUDA only), an exact resume, and
    # the 8B-shaped tokens/s check at its toy size (the same code path as on the GPU)
    done = subprocess.run([sys.executable, "bench/gpu_check.py", "--dry-run", "--steps", "4",
                           "--checks", "sft-bf16,sft-fp16,resume,tokens-per-second-8b"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-3000:]
    assert done.stdout.splitlines()[0] == ("gpu check: CPU (dry run: tiny model, CUDA-only checks skipped), "
                                           "4 steps per run, 1 check(s) at once")
    sft, fp16, resume, speed, last = results(done.stdout)
    assert re.fullmatch(r"PASS  sft-bf16             +\d+s  4 steps in bf16, loss \d+\.\d+ -> \d+\.\d+, \d+\.\ds", sft)
    assert re.fullmatch(r"SKIP  sft-fp16             +\d+s  fp16 mixed precision trains only on CUDA "
                        r"\(the HF Trainer's fp16 needs a GPU\)", fp16)
    assert re.fullmatch(r"PASS  resume               +\d+s  trainingState branch of step 2 ends at step 4: adapter "
                        r"max abs diff \S+ \(tolerance 1e-06\)", resume)
    assert re.fullmatch(
        r"PASS  tokens-per-second-8b +\d+s  0\.\d+M params, 2 x 128 tokens a step, attention sdpa: engine \d+ "
        r"tokens/s/GPU, bare TRL \d+, ratio \d+\.\d\d \(goal >= 0\.95\); MFU engine \S+%, bare \S+% \(\S+ GFLOP/token "
        r"over 989 TFLOP/s\); memory engine peak n/a on CPU, resolver estimate \d+\.\d GiB \(checkpointing off\), "
        r"bare peak n/a on CPU, resolver estimate \d+\.\d GiB \(checkpointing on\)", speed)
    assert last.startswith("gpu check on cpu: 3 passed, 0 failed, 1 skipped in ")
    # the 8B check's runs alternate, engine first, each saying what it measured
    runs = re.findall(r"^\[tokens-per-second-8b\]   8b (engine|bare) run (\d): \d+ tokens/s", done.stdout, re.M)
    assert runs == [("engine", "1"), ("bare", "1"), ("engine", "2"), ("bare", "2")]


def test_an_unknown_check_is_refused_by_name():
    done = subprocess.run([sys.executable, "bench/gpu_check.py", "--dry-run", "--checks", "sft-bf16,warp"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "unknown checks: warp" in done.stderr


# A stand-in for gpu_check.py's --child: "ok" passes, "crash" exits without an outcome, "hang" starts
# a grandchild and never ends (the runner must stop both).
FAKE_CHECK = textwrap.dedent("""
    import json, subprocess, sys, time
    from pathlib import Path
    name, work = sys.argv[sys.argv.index("--child") + 1], Path(sys.argv[sys.argv.index("--work") + 1])
    print("hello from", name)
    if name == "ok":
        (work / "result.json").write_text(json.dumps({"status": "PASS", "detail": "fine"}))
    elif name == "crash":
        sys.exit(1)
    else:
        grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        (work / "grandchild.pid").write_text(str(grandchild.pid))
        time.sleep(600)
""")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in state  # a zombie has ended


def test_a_check_that_crashes_or_hangs_fails_alone_and_a_late_one_is_skipped(tmp_path, capsys):
    script = tmp_path / "fake_check.py"
    script.write_text(FAKE_CHECK)
    runner = Runner(device="cpu", work=tmp_path, model_dir=tmp_path, steps=1, dry_run=True,
                    ends_at=time.perf_counter() + 8, script=script, min_start_s=4)
    runner.run(["ok", "crash", "hang"], at_once=3)  # together; the hang is stopped at the deadline
    runner.run(["late"], at_once=1)  # then less than min_start_s is left
    outcomes = {name: (o.status, o.detail) for name, o in runner.outcomes.items()}
    assert outcomes["ok"] == ("PASS", "fine")
    assert outcomes["crash"] == ("FAIL", "its process exited with 1 and wrote no outcome")
    assert outcomes["hang"][0] == "FAIL" and outcomes["hang"][1].startswith("stopped after ")
    assert "it had not finished within its limit of " in outcomes["hang"][1]
    assert outcomes["late"][0] == "SKIP" and re.fullmatch(r"not started: \d+s of the deadline left", outcomes["late"][1])
    assert not _alive(int((tmp_path / "hang" / "grandchild.pid").read_text()))  # its process group went with it
    printed = capsys.readouterr().out
    assert "[crash] hello from crash" in printed and "[hang] hello from hang" in printed
