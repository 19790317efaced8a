"""How bench/gpu_check.py runs its checks: each in a process of its own, so that one that fails,
crashes the CUDA context or runs out of memory leaves the others be, and none can hang the whole.

- every check is `python bench/gpu_check.py --child NAME ...` in a new process session, its output in
  a log of its own (printed, each line prefixed with `[NAME]`, when it ends), its outcome in a file;
- a check that runs past its limit (CUDA_TIMEOUT_S, or whatever is left of the deadline) is killed
  with its whole process group (its serving processes and ranks too) and fails; one that would start
  with less than MIN_START_S of the deadline left is skipped, saying so;
- `Runner.run(names, at_once)`: at most `at_once` checks at a time (gpu_check runs the tokens/s
  checks one at a time, first, and the others together: a 100M model leaves an H200 mostly idle).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

GPU_CHECK = Path(__file__).resolve().with_name("gpu_check.py")
# The whole check on CUDA: the first device call must end within 8 minutes, the machine's start and
# gpu_run.sh's install included (docs/gpu-check.md has each check's expected time on an H200).
CUDA_DEADLINE_S = 390.0
CUDA_TIMEOUT_S = {"tokens-per-second-8b": 240.0, "tokens-per-second": 120.0}
OTHER_CUDA_TIMEOUT_S = 180.0
CPU_TIMEOUT_S = 900.0  # a dry run on a small shared CPU: generous, still bounded
MIN_START_S = 20.0
LOG_LINES = 400  # of each check's log, the last ones are printed
POLL_S = 0.25


@dataclass
class Outcome:
    status: str  # "PASS", "FAIL" or "SKIP"
    detail: str


def line(name: str, outcome: Outcome, seconds: float) -> str:
    return f"{outcome.status:<4}  {name:<20} {seconds:4.0f}s  {outcome.detail}"


@dataclass
class Running:
    process: subprocess.Popen
    began: float
    limit: float
    log: Path
    result: Path


class Runner:
    def __init__(self, *, device: str, work: Path, model_dir: Path, steps: int, dry_run: bool,
                 ends_at: float | None, script: Path = GPU_CHECK, min_start_s: float = MIN_START_S):
        self.device, self.work, self.model_dir, self.steps, self.dry_run = device, work, model_dir, steps, dry_run
        self.ends_at = ends_at  # time.perf_counter() of the deadline; None: none
        self.script = script  # what runs a check given --child NAME (the tests give their own)
        self.min_start_s = min_start_s
        self.outcomes: dict[str, Outcome] = {}
        self.seconds: dict[str, float] = {}

    def left(self) -> float | None:
        return None if self.ends_at is None else self.ends_at - time.perf_counter()

    def timeout(self, name: str) -> float:
        own = CUDA_TIMEOUT_S.get(name, OTHER_CUDA_TIMEOUT_S) if self.device == "cuda" else CPU_TIMEOUT_S
        left = self.left()
        return own if left is None else min(own, left)

    def run(self, names: list[str], *, at_once: int) -> None:
        pending, running = list(names), {}
        try:
            while pending or running:
                while pending and len(running) < at_once:
                    name = pending.pop(0)
                    left = self.left()
                    if left is not None and left < self.min_start_s:
                        self.finish(name, Outcome("SKIP", f"not started: {max(left, 0):.0f}s of the deadline left"), 0.0)
                    else:
                        running[name] = self.start(name)
                for name, one in list(running.items()):
                    elapsed = time.perf_counter() - one.began
                    if one.process.poll() is not None:
                        del running[name]
                        self.finish(name, self.read(one), elapsed, one.log)
                    elif elapsed > one.limit:
                        del running[name]
                        self.kill(one)
                        self.finish(name, Outcome("FAIL", f"stopped after {elapsed:.0f}s: it had not finished "
                                                          f"within its limit of {one.limit:.0f}s"), elapsed, one.log)
                time.sleep(POLL_S)
        finally:  # interrupted: nothing of ours runs on
            for one in running.values():
                self.kill(one)

    def start(self, name: str) -> Running:
        folder = self.work / name
        folder.mkdir(parents=True, exist_ok=True)
        log = folder / "check.log"
        argv = [sys.executable, str(self.script), "--child", name, "--work", str(folder),
                "--model-dir", str(self.model_dir), "--steps", str(self.steps)] + (["--dry-run"] if self.dry_run else [])
        with open(log, "wb") as out:
            process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)
        return Running(process, time.perf_counter(), self.timeout(name), log, folder / "result.json")

    @staticmethod
    def read(one: Running) -> Outcome:
        if not one.result.is_file():
            return Outcome("FAIL", f"its process exited with {one.process.returncode} and wrote no outcome")
        found = json.loads(one.result.read_text())
        return Outcome(found["status"], found["detail"])

    @staticmethod
    def kill(one: Running) -> None:
        try:
            os.killpg(one.process.pid, signal.SIGKILL)  # its serving processes and ranks with it
        except ProcessLookupError:
            pass
        one.process.wait()

    def finish(self, name: str, outcome: Outcome, seconds: float, log: Path | None = None) -> None:
        if log is not None and log.is_file():
            lines = log.read_text(errors="replace").splitlines()
            if len(lines) > LOG_LINES:
                print(f"[{name}] ... {len(lines) - LOG_LINES} earlier lines left out (of {len(lines)})")
            for text in lines[-LOG_LINES:]:
                print(f"[{name}] {text}")
        self.outcomes[name], self.seconds[name] = outcome, seconds
        print(line(name, outcome, seconds), flush=True)
