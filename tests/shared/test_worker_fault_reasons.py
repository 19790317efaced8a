"""The sentences of a worker's faults (issue 14), word for word."""

from shared import reasons


def test_worker_restart_sentences():
    assert reasons.worker_restarted_requeued("local") == "worker restarted on node local; re-queued keeping its place"
    assert reasons.worker_restarted_cancelled("local") == (
        "cancelled by the user; its worker on node local restarted before it stopped")
    assert reasons.worker_lost_requeued("local") == "worker lost on node local; re-queued keeping its place"
