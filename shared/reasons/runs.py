"""Runs as they stop, fail, pause and resume: the details stored on them, and what their trackers
say (shared/tracker_config.py, services/trainer_worker/trackers/)."""

from __future__ import annotations



CANCELLED_BY_USER = "cancelled by the user"


CANCELLED_WHILE_QUEUED = "cancelled by the user before it was granted GPUs"


def run_failed(error: str) -> str:
    return f"training failed: {error}"


def cannot_pause(run_id: str, status: str) -> str:
    return f"run {run_id} is {status}; only a STARTING or RUNNING run can be paused"


def cannot_resume(run_id: str, status: str) -> str:
    return f"run {run_id} is {status}; only a PAUSED run can be resumed"


def rank_failed(*, rank: int, world: int, how: str) -> str:
    """SPEC 3.2: one process of a multi-GPU run failed; `how` is e.g. "was killed by SIGKILL"."""
    return f"rank {rank} of {world} {how}; the other ranks were stopped"


def tracker_package_missing(tracker: str, package: str, source: str) -> str:
    return (f"deployment config: trackers.reportTo names {tracker}, but this worker's Python has no "
            f"{package} package (it comes with {source})")


def tracker_failed(tracker: str, what: str, error: str) -> str:
    return f"{tracker} {what} and gets no more of this run's metrics: {error}; the run trains on"


def run_has_no_tensorboard_events(run_id: str) -> str:
    return f"run {run_id} has no TensorBoard event files yet: they are written from its first step"


def run_paused_disk_full(step: int) -> str:
    """Detail (and warn event) of a run whose snapshot could not be written for a full disk: PAUSED,
    not FAILED; the half-written snapshot is removed and its earlier snapshots are kept."""
    return (f"paused: the snapshot of step {step} could not be written because the disk is full (no space "
            "left where the trainer stores artifacts); free space there, then `training runs resume` continues "
            "from the run's latest snapshot")
