"""TensorBoard event files of a run, in its artifacts at `runs/RUN/tensorboard` (one file per
attempt; `tensorboard --logdir` reads them as one series). Written with torch's SummaryWriter,
which needs the `tensorboard` package (a dependency of the trainer)."""

from __future__ import annotations

from typing import Any

from shared.store.artifacts import ArtifactStore, join, tensorboard_key

FLUSH_S = 5  # a running run's file is readable (and downloadable) this soon after a step


class TensorBoardEvents:
    name = "tensorboard"

    def __init__(self, *, artifacts: ArtifactStore, run: dict[str, Any]):
        from torch.utils.tensorboard import SummaryWriter

        self.artifacts = artifacts
        self.key = tensorboard_key(run["id"])
        self.directory = artifacts.scratch(self.key)
        self.before = {p.name for p in self.directory.iterdir()}
        self.writer = SummaryWriter(log_dir=str(self.directory), flush_secs=FLUSH_S,
                                    filename_suffix=f".attempt-{int(run.get('attempts') or 0)}")

    def log(self, step: int, scalars: dict[str, float]) -> None:
        for name, value in scalars.items():
            self.writer.add_scalar(name, value, global_step=step)

    def close(self, outcome: str | None) -> None:
        self.writer.close()
        # Publish this attempt's file by itself: earlier attempts' files stay as they are (on a
        # local disk the scratch directory is the key's own place, and this rewrites it in place).
        for path in sorted(self.directory.iterdir()):
            if path.is_file() and path.name not in self.before:
                with path.open("rb") as data:
                    self.artifacts.put_file(join(self.key, path.name), data)
