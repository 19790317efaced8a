"""The sentences of a worker's faults (issue 14), word for word."""

from shared import reasons


def test_worker_restart_sentences():
    assert reasons.worker_restarted_requeued("local") == "worker restarted on node local; re-queued keeping its place"
    assert reasons.worker_restarted_cancelled("local") == (
        "cancelled by the user; its worker on node local restarted before it stopped")
    assert reasons.worker_lost_requeued("local") == "worker lost on node local; re-queued keeping its place"


def test_worker_stop_and_lost_process_sentences():
    """Issue 26: a worker asked to stop, a process killed under a live worker."""
    assert reasons.worker_stopping(6.0) == (
        "its worker is stopping: writing a snapshot at the next step boundary (waiting at most 6 s), "
        "then re-queueing the run")
    assert reasons.worker_stopped_requeued("local") == "worker on node local stopped; re-queued keeping its place"
    assert reasons.worker_stopped_cancelled("local") == (
        "cancelled by the user; its worker on node local stopped before it did")
    assert reasons.worker_stopped_unsaved(6.0) == (
        "no step boundary came within 6 s of the worker's stop: re-queued without a new snapshot, "
        "it resumes from its latest one")
    assert reasons.process_lost_requeued("evaluation", "gpu-1", 2, 3) == (
        "the process that ran this evaluation on node gpu-1 died (killed from outside it, for example by the "
        "out-of-memory killer); re-queued keeping its place (loss 2 of 3 before it fails)")
    assert reasons.process_lost_cancelled("run", "local") == (
        "cancelled by the user; the process that ran this run on node local died before it stopped")
    assert reasons.process_lost_failed("run", "local", 3, since_snapshot=True) == (
        "the process that ran this run on node local died 3 times with no new snapshot between them (killed "
        "from outside it, for example by the out-of-memory killer); failed instead of started again")
