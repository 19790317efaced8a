"""A run's process logs (issue 30): their bounds, shared by the worker that writes them
(services/trainer_worker/process_log.py) and the API that serves them (`GET /v1/runs/ID/process-log`).

One file per worker process that trained the run, under shared/artifacts.py `process_log_key`,
named by when the process started, so their names sort in time. A writer keeps the last
`MAX_BYTES_PER_PROCESS` of its output; the reader answers the last `MAX_PROCESSES_SHOWN` files, each
read to at most that bound (plus the line that says what was cut), oldest first."""

from __future__ import annotations

from pathlib import PurePosixPath

from shared import reasons
from shared.artifacts import ArtifactStore, process_log_key

MAX_BYTES_PER_PROCESS = 1 << 20
MAX_PROCESSES_SHOWN = 8
# a writer's file is its kept tail and one line saying what was cut before it
_READ_BOUND = MAX_BYTES_PER_PROCESS + 1024


def process_log(artifacts: ArtifactStore, run_id: str) -> bytes | None:
    """The run's process logs as one text, oldest first; None when no worker has written one yet."""
    folder = process_log_key(run_id)
    keys = [k for k in artifacts.list(folder)
            if PurePosixPath(k).parent == PurePosixPath(folder) and k.endswith(".log")]
    if not keys:
        return None
    shown = keys[-MAX_PROCESSES_SHOWN:]
    parts = []
    if len(keys) > len(shown):
        parts.append((reasons.process_logs_left_out(len(keys) - len(shown), len(shown)) + "\n").encode())
    for key in shown:
        try:
            with artifacts.open(key) as fh:
                parts.append(fh.read(_READ_BOUND))
        except FileNotFoundError:
            continue
    return b"".join(parts)
