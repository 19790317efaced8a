"""A run's own process output (issue 30), kept as a log a user downloads (`GET /v1/runs/ID/process-log`,
`training runs logs ID --process`): what the libraries that train it logged (transformers, TRL, PEFT,
torch, datasets: their `logging` records and Python warnings), the run's events and metric points as
they happen, the tail of each rank's own output for a run across several devices, and, when it fails,
the traceback. Its events say what happened in sentences; this says what the process saw.

Bounded: each worker process that trains the run keeps the last `MAX_BYTES` of what it wrote (its
first line says what was cut) and writes them to the artifact store (shared/artifacts.py
`process_log_key`: one file per process, so a resumed run keeps its earlier processes' logs) at most
every `FLUSH_EVERY_S` while it trains, and once more as it ends. Plain Python; nothing here reads torch.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback as tb
from collections import deque
from datetime import datetime, timezone
from pathlib import Path

from shared import reasons
from shared.artifacts import ArtifactStore, process_log_key
from shared.process_logs import MAX_BYTES_PER_PROCESS

MAX_BYTES = MAX_BYTES_PER_PROCESS  # what one process's log keeps: its tail
FLUSH_EVERY_S = 5.0
RANK_TAIL_BYTES = 64 << 10  # what a rank's own output adds to it, from its end
# root (TRL, PEFT, torch, datasets, and the Python warnings logging.captureWarnings sends to
# py.warnings, all propagate to it) and transformers (its own handler, no propagation)
LOGGERS = ("", "transformers")


def stamp(moment: datetime | None = None) -> str:
    """A UTC time as a file name that sorts in time: 20261205T001500.123456Z."""
    return (moment or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%S.%fZ")


class _Handler(logging.Handler):
    def __init__(self, log: ProcessLog):
        super().__init__(level=logging.INFO)
        self.log = log
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.log.write(self.format(record))
        except Exception:  # a log line must never fail the run
            self.handleError(record)


class ProcessLog:
    """The bounded log of one worker process's work on a run."""

    def __init__(self, artifacts: ArtifactStore, run_id: str, *, max_bytes: int = MAX_BYTES,
                 flush_every_s: float = FLUSH_EVERY_S):
        self.artifacts = artifacts
        self.key = process_log_key(run_id, stamp())
        self.max_bytes, self.flush_every_s = max_bytes, flush_every_s
        self._lines: deque[str] = deque()
        self._bytes = 0
        self.cut_bytes = 0  # what was dropped from the front to keep the tail
        self._lock = threading.Lock()
        self._last_flush = time.monotonic()
        self._handler: _Handler | None = None
        self._captured_warnings = False

    def write(self, text: str) -> None:
        """Add lines, each stamped with the time; the oldest go once the log passes its bound."""
        now = datetime.now(timezone.utc).strftime("%H:%M:%S.%f")[:-3]
        with self._lock:
            for line in str(text).rstrip("\n").split("\n"):
                line = f"{now} {line}\n"
                self._lines.append(line)
                self._bytes += len(line.encode("utf-8", "replace"))
            while self._bytes > self.max_bytes and len(self._lines) > 1:
                dropped = len(self._lines.popleft().encode("utf-8", "replace"))
                self._bytes -= dropped
                self.cut_bytes += dropped
        if time.monotonic() - self._last_flush >= self.flush_every_s:
            self.flush()

    def traceback(self, exc: BaseException) -> None:
        self.write("".join(tb.format_exception(type(exc), exc, exc.__traceback__)))

    def rank_outputs(self, ranks_dir: Path) -> None:
        """The tail of each rank's own output (engines/distributed.py writes rank-R.log)."""
        for path in sorted(ranks_dir.glob("rank-*.log")) if ranks_dir.is_dir() else []:
            try:
                size = path.stat().st_size
                with open(path, "rb") as fh:
                    fh.seek(max(0, size - RANK_TAIL_BYTES))
                    tail = fh.read().decode("utf-8", "replace")
            except OSError:
                continue
            self.write(reasons.process_log_rank_output(path.stem, size, min(size, RANK_TAIL_BYTES)))
            self.write(tail)

    def text(self) -> bytes:
        with self._lock:
            head = reasons.process_log_cut(self.cut_bytes, self.max_bytes) + "\n" if self.cut_bytes else ""
            return (head + "".join(self._lines)).encode("utf-8", "replace")

    def flush(self) -> None:
        """Write what it holds to the artifact store (a rename: a reader sees the old or the new)."""
        self._last_flush = time.monotonic()
        try:
            self.artifacts.put_file(self.key, self.text())
        except OSError:  # a full disk or a lost mount: the run goes on, its log is behind
            pass

    def attach(self) -> ProcessLog:
        """Take the libraries' log records and Python's warnings until `detach`."""
        self._handler = _Handler(self)
        for name in LOGGERS:
            logging.getLogger(name).addHandler(self._handler)
        self._captured_warnings = True
        logging.captureWarnings(True)
        return self

    def detach(self) -> None:
        if self._handler is not None:
            for name in LOGGERS:
                logging.getLogger(name).removeHandler(self._handler)
            self._handler = None
        if self._captured_warnings:
            logging.captureWarnings(False)
            self._captured_warnings = False
        self.flush()
