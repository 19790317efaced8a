"""SFT packing benchmark (not a test): `python bench/sft_packing.py [STEPS] [OUT.json]`.

Trains the same seeded SFT run twice with the real engine (engines/sft.run_sft) on the built-in
tiny model and the bundled sample dataset, on one CPU slot: once with rows padded per micro-batch
(`packing: false`, the default) and once packed (`packing: true`: rows share sequences of up to
maxSeqLength tokens, with a mask that keeps them apart, engines/packing.py). Same batchSize (8),
maxSeqLength (256) and STEPS (default 12); the first 2 steps of each are left out as warm-up.

Figures per run: the median `tokensPerSecond` the engine reports (real tokens, padding excluded),
the wall time of the run and its last loss; then the packed/padded ratio of tokens per second. A packed step holds
batchSize sequences, so many more rows: the fair comparison is tokens per second. Results:
docs/sft-packing.md.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from services.trainer_worker.engines.sft import run_sft  # noqa: E402
from shared.models.tiny_models import ensure_builtin  # noqa: E402
from shared.store.artifacts import ArtifactRoot  # noqa: E402
from tests.trainer_worker.doubles import RecordingReporter, make_job  # noqa: E402

WARMUP = 2


def one_run(model_dir: Path, work: Path, steps: int, packing: bool) -> dict:
    reporter = RecordingReporter()
    started = time.perf_counter()
    run_sft(make_job(model_dir, work, maxSteps=steps, every_steps=None, packing=packing, maxSeqLength=256),
            reporter)
    wall = time.perf_counter() - started
    points = [p for p in reporter.points if "tokensPerSecond" in p][WARMUP:]
    rate = statistics.median(p["tokensPerSecond"] for p in points)
    return {"packing": packing, "steps": steps, "wallSeconds": round(wall, 2),
            "medianTokensPerSecond": round(rate, 1), "finalLoss": round(points[-1]["loss"], 4),
            "firstEvent": next(m for _, m in reporter.events if m.startswith("training "))}


def main(argv: list[str]) -> int:
    steps = int(argv[0]) if argv else 12
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model_dir = ensure_builtin("tiny-qwen3", ArtifactRoot(tmp / "artifacts"))
        padded = one_run(model_dir, tmp / "padded", steps, packing=False)
        packed = one_run(model_dir, tmp / "packed", steps, packing=True)
    result = {"padded": padded, "packed": packed,
              "tokensPerSecondRatio": round(packed["medianTokensPerSecond"] / padded["medianTokensPerSecond"], 2)}
    print(json.dumps(result, indent=2))
    if len(argv) > 1:
        Path(argv[1]).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
