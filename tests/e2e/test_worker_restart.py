"""Issue 14, a worker killed and started again at once (services/trainer_worker/reclaim.py): through
the real services (API, scheduler, Celery worker, SFT on the tiny model), the worker is killed with
SIGKILL mid-run and started again within a second. At start-up, as its node's only worker, it
re-queues the run it left behind, which trains again from its latest snapshot and succeeds, long
before the scheduler's lost-worker timeout (lease TTL 30 s + workerLostAfterS 60 s) would have.

The figures (restart -> QUEUED, restart -> training again) are printed; docs/faults.md records them.
"""

from __future__ import annotations

import signal
import time

from shared.store.times import epoch
from tests.e2e.test_durability import PLAN, events, step_of
from tests.e2e.test_run_through_services import upload_sample, wait_terminal

# Far below the ~85 s of the lost-worker timeout: the worker's own start-up (Python and Celery
# imports on a busy machine) is most of it.
REQUEUED_WITHIN_S = 20


def training_started_after(stack, run_id: str, since: float) -> dict | None:
    """The run's `training started` event of an attempt that began after `since` (its engine loaded
    again: the first step of that attempt comes next)."""
    return next((e for e in stack.get(f"/v1/runs/{run_id}/events").json()["items"]
                 if e["message"].startswith("training started") and epoch(e["time"]) > since), None)


def test_a_worker_restarted_within_a_second_requeues_its_run_at_start_up(stack, capsys):
    dataset = upload_sample(stack)
    run = stack.post("/v1/runs", json={**PLAN, "dataset": dataset}).json()
    stack.wait_until("step 22", lambda: step_of(stack, run["id"]) >= 22, every_s=0.05)
    stack.stop("worker", sig=signal.SIGKILL)  # the whole process group: the worker and its children
    killed_at = step_of(stack, run["id"])
    restarted = time.time()
    stack.start_worker()

    def requeue_event():
        return next((e for e in stack.get(f"/v1/runs/{run['id']}/events").json()["items"]
                     if e["message"] == "worker restarted on node local; re-queued keeping its place"), None)

    event = stack.wait_until("the restarted worker to re-queue the run", requeue_event, timeout_s=60)
    assert event["level"] == "warn"
    queued_after_s = epoch(event["time"]) - restarted

    point = stack.wait_until("the run to train again", lambda: training_started_after(stack, run["id"], restarted),
                             timeout_s=120)
    training_after_s = epoch(point["time"]) - restarted
    with capsys.disabled():
        print(f"\n[faults] worker restarted {time.strftime('%H:%M:%S', time.localtime(restarted))}: "
              f"run QUEUED again after {queued_after_s:.1f} s, training again after "
              f"{training_after_s:.1f} s; killed at step {killed_at}")
    assert queued_after_s < REQUEUED_WITHIN_S, stack.log_tail("worker")

    done = wait_terminal(stack, run["id"])
    log = events(stack, run["id"])
    assert done["status"] == "SUCCEEDED", log
    assert done["attempts"] == 1 and done["progress"]["step"] == 60
    assert not any(m.startswith("worker lost on node") for m in log), log  # not the scheduler's timeout
    # It resumed from its latest snapshot at or before the kill: nothing before it is trained twice.
    restored = next(m for m in log if m.startswith("restoring trainingState from step-"))
    resumed_from = int(restored.rsplit("-", 1)[1])
    assert resumed_from % 10 == 0 and resumed_from <= killed_at, (restored, killed_at)
    # The steps after that snapshot were trained again, and logged once (issue 26): every step once.
    points = [p for p in stack.get(f"/v1/runs/{run['id']}/metrics").json()["items"] if p.get("loss") is not None]
    assert [p["step"] for p in points] == list(range(1, 61)), [(p["step"], p["attempt"]) for p in points]
    assert "node taken" in stack.logs["worker"].read_text()
