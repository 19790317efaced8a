"""bench/endpoint_names.py runs on a tiny setting and prints its figures (a benchmark, not a timed
test: no figure is checked against another here; docs/endpoints-benchmark.md has the measured ones)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_name_lookup_benchmark_runs_on_a_tiny_setting_and_prints_its_ratios(redis_url, tmp_path):
    out = tmp_path / "names.json"
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "endpoint_names.py"), "--endpoints", "20", "--repeat", "20",
         "--http-repeat", "10", "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**os.environ, "TRAINING_BENCH_REDIS_URL": redis_url},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    saved = json.loads(out.read_text())
    for where in ("inProcess", "overHttp"):
        assert set(saved[where]) >= {"known", "unknown", "anotherWorkloads", "ratios"}
        assert set(saved[where]["ratios"]) == {"unknownOverKnown", "anotherWorkloadsOverKnown"}
    assert saved["inProcess"]["baselineOldUnknownScanMs"] > 0
    assert "unknown/known" in done.stdout
