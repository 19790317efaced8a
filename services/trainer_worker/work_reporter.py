"""What the reporters of a run (reporter.py) and of an evaluation (evaluation_job.py) share: fenced
writes to the work's document (lease.py: only while this worker holds its lease), its events (in
Redis, and in the worker's log at the same level), and the user's requests read from the document
at most every CANCEL_CHECK_EVERY_S."""

from __future__ import annotations

import time
from typing import Any

from services.trainer_worker.lease import Lease, LeaseLost, fenced_update

CANCEL_CHECK_EVERY_S = 0.5


class WorkReporter:
    kind = "work"  # "run" or "evaluation": how its lease's messages name it

    def __init__(self, *, store, lease: Lease, log, resource_id: str):
        self.store, self.lease, self.log = store, lease, log
        self.id = resource_id
        self._last_requests_read = 0.0

    def update(self, change) -> dict[str, Any]:
        """`store.update` of the work's document, only while this worker holds its lease."""
        return fenced_update(self.store, self.lease, self.kind, change)

    def event(self, message: str, level: str = "info") -> None:
        self.store.add_event(self.id, message, level=level)
        getattr(self.log, "warning" if level == "warn" else level, self.log.info)(message)

    def check_lease(self) -> None:
        """Raise LeaseLost once the lease is gone: the work must stop touching its document."""
        if self.lease.lost.is_set():
            raise LeaseLost(f"lease of {self.kind} {self.id} expired")

    def read_requests(self) -> dict[str, Any] | None:
        """The work's document as stored, when CANCEL_CHECK_EVERY_S passed since the last read (the
        user's cancel or pause request is on it); None between reads."""
        now = time.monotonic()
        if now - self._last_requests_read < CANCEL_CHECK_EVERY_S:
            return None
        self._last_requests_read = now
        return self.store.get(self.id) or {}
