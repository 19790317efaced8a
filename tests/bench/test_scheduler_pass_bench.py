"""bench/scheduler_pass.py runs on a tiny setting and grants (a benchmark, not a timed test: no
figure is checked against a goal here; docs/scheduler-benchmark.md has the measured ones). Since
a claim is granted only on a node whose worker is alive, a bench that forgot its nodes timed passes
that granted nothing; it now fails saying so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TINY = ["--pools", "3", "--claims", "60", "--sustained-s", "0.2"]


def bench(redis_url: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "bench" / "scheduler_pass.py"), *TINY, *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TRAINING_BENCH_REDIS_URL": redis_url})


def test_the_scheduler_bench_grants_in_every_pass_it_times(redis_url, tmp_path):
    out = tmp_path / "scheduler.json"
    done = bench(redis_url, "--out", str(out))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    figures = json.loads(out.read_text())
    assert figures["firstGrants"] >= 3  # each pool's head claim fits an empty node
    assert figures["grantsPerPass"] >= 3
    assert figures["waiting"] == 60 - figures["firstGrants"]
    assert figures["sustainedGrants"] > 0 and figures["sustainedGrants"] % figures["batch"] == 0
    lines = done.stdout.splitlines()
    assert lines[0].startswith("setup: 60 claims in 3 pools of 2x8 devices (every node's worker alive)")
    assert f"first pass granted {figures['firstGrants']};" in lines[0]
    assert lines[-1].startswith(f"sustained: {figures['sustainedGrants']} grants in ")


def test_a_bench_whose_nodes_have_no_worker_stops_saying_nothing_was_granted(redis_url):
    done = bench(redis_url, "--without-live-nodes")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == (
        "scheduler bench: the first pass granted 0 claim(s), and it must grant at least 3; a claim is granted "
        "only on a node whose worker is alive and ready, so the figures would time a pass that grants nothing. "
        "Are the nodes' keys written (mark_nodes_alive)?")
