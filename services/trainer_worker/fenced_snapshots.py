"""A snapshot is registered only by the run's current holder (issue 27, item 5).

A worker that wakes mid-save after its run moved to another node (paused, partitioned, its node
declared dead) must not be able to touch what the new holder wrote. Two things make sure of it:

- **where it publishes**: each attempt of a run publishes its snapshot directories under keys of
  its own (`shared.store.artifacts.run_snapshots_key`: `runs/RUN/snapshots` for the first attempt,
  `runs/RUN/snapshots/attempt-N` once re-queued), so a stale holder's directory can never replace
  one the new holder published;
- **registering it**: the snapshot document, its place in the run's snapshot index and the run's
  `snapshots` / `latestSnapshot` are written in one transaction, only while the run still carries
  the lease's fencing number (as every other write of the run is, lease.py). A stale holder's
  registration writes nothing; it then deletes the directory it had just published (its own key,
  nobody else's) and stops as any holder that lost its lease (LeaseLost).
"""

from __future__ import annotations

from typing import Any

from services.trainer_worker.lease import Lease, LeaseLost
from services.trainer_worker.takeover import LOST_FIELD
from shared.lifecycle.core import StaleWriter, fenced
from shared.store.documents import Store


def register(store: Store, lease: Lease, snapshot: dict[str, Any]) -> dict[str, Any]:
    """Store `snapshot` (a new snapshot document of the leased run), index it under its run and
    attach it to the run, all or nothing, while the run carries the lease's fence. Returns the
    snapshot document as stored; raises LeaseLost (nothing written) for a stale holder."""
    run_id, snapshot_id = lease.resource_id, snapshot["id"]
    if lease.lost.is_set():
        raise LeaseLost(f"lease of run {run_id} expired")
    stored: dict[str, Any] = {}

    def attach(run: dict[str, Any]) -> dict[str, Any]:
        # once, even when a blip made the client send this write twice
        run["snapshots"] = [*(s for s in run.get("snapshots", []) if s != snapshot_id), snapshot_id]
        run["latestSnapshot"] = snapshot_id
        run.pop(LOST_FIELD, None)  # progress saved: a process lost from here on is a first loss again
        return run

    def with_snapshot(pipe: Any, _run: dict[str, Any]) -> None:
        stored.update(store.create_in(pipe, snapshot))
        pipe.zadd(store.keys.snapshots_of(run_id), {snapshot_id: snapshot["step"]})

    try:
        store.update(run_id, fenced(attach, fence=lease.fence, what=f"run {run_id}"), also=with_snapshot)
    except StaleWriter as exc:
        raise LeaseLost(str(exc)) from None
    return stored
