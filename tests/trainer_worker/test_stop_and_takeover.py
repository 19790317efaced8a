"""A worker asked to stop gives its work back, and a task that finds the process before it dead
does too (issue 26; services/trainer_worker/stopping.py, takeover.py): `leased_work.execute` called
as the Celery task calls it, on real Redis, claims granted and dispatched by the scheduler's own
code (only Celery's send_task is recorded instead of sent), real leases, and real processes for
"dead". The signals themselves, in a real process: the last test here; through the real worker
and its Celery pool: tests/e2e/test_worker_stop.py.

The one stand-in: `_run_engine` is replaced by a function that reports like an engine (started,
metrics points, a snapshot, a stop request at a step boundary); it trains nothing. `ChildStop`'s
exit is recorded instead of ending the test's process.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import structlog

from services.scheduler.dispatch import dispatch_granted
from services.trainer_worker import leased_work, run_job, stopping, takeover
from services.trainer_worker.node_worker import Worker
from services.trainer_worker.engines.base import STOP_PAUSE, TrainingResult
from services.trainer_worker.lease import Lease
from services.trainer_worker.reporter import RunReporter
from shared import reasons
from shared.claims.queue import ClaimQueue
from shared.ids import Kind, new_id
from shared.states import ClaimState, RunStatus
from tests.claim_fixtures import RecordingSender
from tests.conftest import mark_nodes_alive

LOG = structlog.get_logger()


@pytest.fixture
def worker(config):
    worker = Worker(config, "local")
    mark_nodes_alive(worker.redis, worker.keys, config)  # the grant pass grants only on live nodes
    return worker


@pytest.fixture
def granted(worker, config):
    """A run (or evaluation) granted on node local and dispatched: STARTING under its claim."""

    def make(kind: str = "run", **fields) -> tuple[str, dict]:
        resource_id = new_id(Kind.RUN if kind == "run" else Kind.EVALUATION)
        worker.store.create({"id": resource_id, "kind": kind, "status": "QUEUED", "workload": f"{kind}s",
                             "pool": "default", "gpus": 1, "scheduling": None, "plan": {}, "attempts": 0,
                             "cancelRequested": False, "progress": {"step": 0}, **fields})
        queue = ClaimQueue(worker.redis, worker.keys, config=config)
        claim = queue.submit(kind=kind, resource_id=resource_id, pool="default", gpus=1, workload=f"{kind}s")
        queue.grant_pass(config, "default")
        dispatch_granted(queue=queue, store=worker.store, celery_app=RecordingSender(), config=config)
        return resource_id, queue.get(claim["id"])

    return make


@pytest.fixture
def stop():
    """This process's stop request, as a pool process has it; its exit recorded, not taken."""
    exits = threading.Event()
    made = stopping.use(stopping.ChildStop(grace_s=5.0, exit=lambda code: exits.set()))
    made.exited = exits
    yield made
    stopping.use(stopping._NeverStopped())


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def events(worker, resource_id: str) -> list[str]:
    return [e["message"] for e in worker.store.events(resource_id)]


def engine(*steps_then):
    """An engine stand-in: `started`, then for each step a metrics point, and whatever the step's
    callable does (it may ask the reporter to stop: then a snapshot is written, as the HF Trainer's
    save does, and the run returns paused)."""

    def run_engine(worker, run, devices, reporter):
        reporter.started(total_steps=len(steps_then))
        for step, then in enumerate(steps_then, start=1):
            reporter.metrics({"step": step, "loss": 2.0 / step})
            if then is not None:
                then(reporter)
            if reporter.stop_request() == STOP_PAUSE:
                directory = worker.artifacts.scratch(f"runs/{run['id']}/snapshots/step-{step:06d}")
                directory.mkdir(parents=True, exist_ok=True)
                (directory / "snapshot.json").write_text("{}")
                reporter.snapshot(step=step, key=f"runs/{run['id']}/snapshots/step-{step:06d}", directory=directory,
                                  manifest={"layout": 2, "gpus": 1, "method": "sft", "engine": "sft-single",
                                            "precision": "fp32", "model": "m", "trainingState": {"format": "x"}},
                                  final=False)
                return TrainingResult(final_step=step, first_loss=2.0, last_loss=2.0 / step, stopped_early=True,
                                      paused=True)
        return TrainingResult(final_step=len(steps_then), first_loss=2.0, last_loss=2.0 / len(steps_then),
                              stopped_early=False)

    return run_engine


@pytest.fixture
def fake_engine(monkeypatch):
    def use(run_engine):
        monkeypatch.setattr(run_job, "_run_engine", run_engine)
        monkeypatch.setattr(run_job, "restore_for", lambda *a, **k: None)

    return use


# --- a task that finds the process before it dead (takeover.py)

def test_a_copy_whose_run_was_held_by_a_dead_process_gives_it_back_at_once(worker, granted):
    run_id, claim = granted()
    worker.store.update(run_id, lambda doc: {**doc, "status": "RUNNING"})
    token = f"local/{socket.gethostname()}/{dead_pid()}:abcdef"  # the pool process the kernel killed
    worker.redis.set(worker.keys.lease(run_id), token, px=30_000)

    began = time.monotonic()
    assert leased_work.execute(worker, "run", run_id, claim["id"]) == "requeued: its previous process died"
    assert time.monotonic() - began < 5  # not the lease's TTL, nor the scheduler's lost-worker timeout
    run = worker.store.get(run_id)
    assert run["status"] == RunStatus.QUEUED and run["attempts"] == 1 and run[takeover.LOST_FIELD] == 1
    assert reasons.process_lost_requeued("run", "local", 1, 3) in events(worker, run_id)
    assert reasons.process_lost_requeued("run", "local", 1, 3) == (
        "the process that ran this run on node local died (killed from outside it, for example by the "
        "out-of-memory killer); re-queued keeping its place (loss 1 of 3 before it fails)")
    new_claim = worker.claims().current(run_id)
    assert new_claim["state"] == ClaimState.WAITING and new_claim["seq"] == claim["seq"]  # keeping its place
    assert worker.claims().get(claim["id"])["state"] == ClaimState.RELEASED
    assert not worker.redis.exists(worker.keys.lease(run_id))  # the next holder finds it free


def test_a_copy_whose_run_is_running_without_a_lease_gives_it_back_instead_of_failing_it(
        worker, granted, fake_engine):
    """Before: the copy took the free lease and its engine failed the run (`a run cannot go from
    RUNNING to RUNNING`): what `training down` + `training up` did to every run in progress."""
    fake_engine(engine(None, None))
    run_id, claim = granted()
    worker.store.update(run_id, lambda doc: {**doc, "status": "RUNNING"})
    assert leased_work.execute(worker, "run", run_id, claim["id"]) == "requeued: its previous process died"
    run = worker.store.get(run_id)
    assert run["status"] == RunStatus.QUEUED and run.get("detail") is None


def test_a_copy_whose_evaluation_was_held_by_a_dead_process_gives_it_back_to_score_again(worker, granted):
    evaluation_id, claim = granted("evaluation", progress={"rows": 3, "totalRows": 9})
    worker.store.update(evaluation_id, lambda doc: {**doc, "status": "RUNNING"})
    worker.redis.set(worker.keys.lease(evaluation_id), f"local/{socket.gethostname()}/{dead_pid()}:ab", px=30_000)
    assert leased_work.execute(worker, "evaluation", evaluation_id, claim["id"]) == "requeued: its previous process died"
    evaluation = worker.store.get(evaluation_id)
    assert evaluation["status"] == "QUEUED" and evaluation["attempts"] == 1
    assert reasons.process_lost_requeued("evaluation", "local", 1, 3) in events(worker, evaluation_id)


def test_a_copy_skips_a_run_whose_holder_is_alive(worker, granted):
    run_id, claim = granted()
    worker.store.update(run_id, lambda doc: {**doc, "status": "RUNNING"})
    worker.redis.set(worker.keys.lease(run_id), "local/another-host/1:aa", px=30_000)
    stop_renewing = threading.Event()

    def renew():  # a live holder on another machine
        while not stop_renewing.wait(0.2):
            worker.redis.pexpire(worker.keys.lease(run_id), 30_000)

    thread = threading.Thread(target=renew, daemon=True)
    thread.start()
    try:
        assert leased_work.execute(worker, "run", run_id, claim["id"]) == "skipped: leased elsewhere"
    finally:
        stop_renewing.set()
        thread.join()
    assert worker.store.get(run_id)["status"] == RunStatus.RUNNING
    assert worker.redis.get(worker.keys.lease(run_id)) == "local/another-host/1:aa"


def test_a_run_whose_process_dies_three_times_with_no_snapshot_between_fails_with_a_sentence(
        worker, granted, config):
    run_id, claim = granted()
    outcomes = []
    for _ in range(takeover.MAX_LOST_PROCESSES):
        worker.store.update(run_id, lambda doc: {**doc, "status": "RUNNING"})
        worker.redis.set(worker.keys.lease(run_id), f"local/{socket.gethostname()}/{dead_pid()}:ab", px=30_000)
        outcomes.append(leased_work.execute(worker, "run", run_id, claim["id"]))
        queue = ClaimQueue(worker.redis, worker.keys, config=config)
        queue.grant_pass(config, "default")
        dispatch_granted(queue=queue, store=worker.store, celery_app=RecordingSender(), config=config)
        claim = queue.current(run_id) or claim
    assert outcomes == ["requeued: its previous process died"] * 2 + ["failed: its process kept dying"]
    run = worker.store.get(run_id)
    assert run["status"] == RunStatus.FAILED and run["detail"] == (
        "the process that ran this run on node local died 3 times with no new snapshot between them (killed from "
        "outside it, for example by the out-of-memory killer); failed instead of started again")
    assert worker.store.events(run_id)[-1]["level"] == "error"
    assert worker.claims().current(run_id) is None  # its devices are free
    assert reasons.process_lost_failed("evaluation", "local", 3, since_snapshot=False) == (
        "the process that ran this evaluation on node local died 3 times (killed from outside it, for example by "
        "the out-of-memory killer); failed instead of started again")


def test_a_snapshot_starts_the_count_of_lost_processes_over(worker, granted):
    run_id, claim = granted()
    worker.store.update(run_id, lambda doc: {**doc, "status": "RUNNING", takeover.LOST_FIELD: 2})
    lease = Lease(worker.redis, worker.keys, run_id, worker.holder)
    assert lease.acquire()
    try:
        run = worker.store.update(run_id, lambda doc: {**doc, "fence": lease.fence})
        reporter = RunReporter(store=worker.store, artifacts=worker.artifacts, run=run, lease=lease, log=LOG)
        directory = worker.artifacts.scratch(f"runs/{run_id}/snapshots/step-000010")
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "snapshot.json").write_text("{}")
        reporter.snapshot(step=10, key=f"runs/{run_id}/snapshots/step-000010", directory=directory, final=False,
                          manifest={"layout": 2, "gpus": 1, "method": "sft", "engine": "sft-single",
                                    "precision": "fp32", "model": "m"})
    finally:
        lease.release()
    assert takeover.LOST_FIELD not in worker.store.get(run_id)


def test_a_cancelled_run_whose_process_died_is_cancelled(worker, granted):
    run_id, claim = granted()
    worker.store.update(run_id, lambda doc: {**doc, "status": "RUNNING", "cancelRequested": True,
                                             takeover.LOST_FIELD: 2})
    worker.redis.set(worker.keys.lease(run_id), f"local/{socket.gethostname()}/{dead_pid()}:ab", px=30_000)
    assert leased_work.execute(worker, "run", run_id, claim["id"]) == "cancelled: its previous process died"
    run = worker.store.get(run_id)
    assert run["status"] == RunStatus.CANCELLED
    assert run["detail"] == "cancelled by the user; the process that ran this run on node local died before it stopped"


# --- metrics of steps trained again are not logged twice

def test_a_resumed_run_logs_each_step_once(worker, granted, fake_engine):
    run_id, claim = granted()
    for step in (1, 2, 3):  # logged by the attempt whose process died after step 3 (snapshot at 2)
        worker.store.add_metrics(run_id, {"step": step, "loss": 2.0 / step, "attempt": 0})
    worker.store.add_metrics(run_id, {"step": 2, "validationLoss": 1.5, "attempt": 0})

    def resumed(worker, run, devices, reporter):
        reporter.started(total_steps=5)
        for step in (3, 4, 5):
            reporter.metrics({"step": step, "loss": 2.0 / step})
            if step == 4:
                reporter.metrics({"step": 4, "validationLoss": 1.2})
        return TrainingResult(final_step=5, first_loss=2.0, last_loss=0.4, stopped_early=False)

    fake_engine(resumed)
    worker.store.update(run_id, lambda doc: {**doc, "attempts": 1})
    assert leased_work.execute(worker, "run", run_id, claim["id"]) == RunStatus.SUCCEEDED
    points = worker.store.metrics(run_id)
    assert [p["step"] for p in points if "loss" in p] == [1, 2, 3, 4, 5]
    assert [p["attempt"] for p in points if "loss" in p] == [0, 0, 0, 1, 1]
    assert [p["step"] for p in points if "validationLoss" in p] == [2, 4]
    assert worker.store.get(run_id)["progress"]["step"] == 5


def test_a_resumed_runs_summary_starts_at_its_first_step_not_at_the_resume_point(worker, granted, fake_engine):
    """Issue 29 item 4: the attempt that resumes at step 3 first sees loss 0.8940, but the run's
    summary says where the run started (step 1's 2.4760, from the series: the lost attempt never
    wrote its progress), and its progress and series cover every step."""
    run_id, claim = granted()
    for step, loss in ((1, 2.476), (2, 1.5)):  # the attempt whose process died after step 2
        worker.store.add_metrics(run_id, {"step": step, "loss": loss, "attempt": 0})

    def resumed(worker, run, devices, reporter):
        reporter.started(total_steps=4)
        for step, loss in ((3, 0.894), (4, 0.0761)):
            reporter.metrics({"step": step, "loss": loss})
        return TrainingResult(final_step=4, first_loss=0.894, last_loss=0.0761, stopped_early=False)

    fake_engine(resumed)
    worker.store.update(run_id, lambda doc: {**doc, "attempts": 1})
    assert leased_work.execute(worker, "run", run_id, claim["id"]) == RunStatus.SUCCEEDED
    assert reasons.run_succeeded(4, 2.476, 0.0761) == "succeeded at step 4: loss 2.4760 -> 0.0761"
    assert "succeeded at step 4: loss 2.4760 -> 0.0761" in events(worker, run_id)
    assert worker.store.get(run_id)["progress"]["firstLoss"] == 2.476
    assert [p["loss"] for p in worker.store.metrics(run_id)] == [2.476, 1.5, 0.894, 0.0761]


# --- a cancel while STARTING

def test_a_cancel_sent_while_the_engine_loads_ends_the_run_cancelled_before_its_first_step(
        worker, granted, fake_engine):
    def loads_then_starts(worker, run, devices, reporter):
        worker.store.update(run["id"], lambda doc: {**doc, "cancelRequested": True})  # the API, while it loads
        reporter.started(total_steps=3)
        for step in (1, 2, 3):  # a short run: over before a throttled cancel check would come
            reporter.metrics({"step": step, "loss": 1.0})
        return TrainingResult(final_step=3, first_loss=1.0, last_loss=1.0, stopped_early=False)

    fake_engine(loads_then_starts)
    run_id, claim = granted()
    assert leased_work.execute(worker, "run", run_id, claim["id"]) == RunStatus.CANCELLED
    run = worker.store.get(run_id)
    assert run["status"] == RunStatus.CANCELLED and run["detail"] == reasons.CANCELLED_BY_USER
    assert run.get("startedAt") is None and worker.store.metrics(run_id) == []
    assert worker.claims().get(claim["id"])["state"] == ClaimState.RELEASED


# --- a worker asked to stop (stopping.py)

def test_a_stopped_worker_saves_at_the_step_boundary_and_gives_the_run_back(worker, granted, fake_engine, stop):
    fake_engine(engine(None, lambda reporter: stop.request(), None, None))
    run_id, claim = granted()
    assert leased_work.execute(worker, "run", run_id, claim["id"]) == "requeued: worker stopping"
    run = worker.store.get(run_id)
    assert run["status"] == RunStatus.QUEUED and run["attempts"] == 1
    snapshot = worker.store.get(run["latestSnapshot"])
    assert snapshot["step"] == 2 and run["snapshots"] == [snapshot["id"]]  # it resumes from the stop's step
    log = events(worker, run_id)
    assert reasons.worker_stopping(5.0) in log and reasons.worker_stopped_requeued("local") in log
    assert reasons.worker_stopping(5.0) == ("its worker is stopping: writing a snapshot at the next step boundary "
                                            "(waiting at most 5 s), then re-queueing the run")
    assert reasons.worker_stopped_requeued("local") == "worker on node local stopped; re-queued keeping its place"
    assert worker.claims().current(run_id)["seq"] == claim["seq"]
    assert not worker.redis.exists(worker.keys.lease(run_id))
    time.sleep(0.2)
    assert not stop.exited.is_set()  # it gave the run back itself: the task ends as usual


def test_a_run_with_no_step_boundary_within_the_grace_is_given_back_without_a_snapshot(
        worker, granted, fake_engine, stop):
    stop.grace_s = 0.5

    def stuck_in_a_long_step(reporter):
        stop.request()
        assert stop.exited.wait(10)  # the watchdog gave it back and ended the process

    fake_engine(engine(stuck_in_a_long_step))
    run_id, claim = granted()
    assert leased_work.execute(worker, "run", run_id, claim["id"]) == "stopped: lease lost"  # what it tried next
    run = worker.store.get(run_id)
    assert run["status"] == RunStatus.QUEUED and not run.get("snapshots")
    log = events(worker, run_id)
    assert reasons.worker_stopped_unsaved(5.0) == (
        "no step boundary came within 5 s of the worker's stop: re-queued without a new snapshot, it resumes "
        "from its latest one")
    assert reasons.worker_stopped_unsaved(0.5) in log
    assert reasons.worker_stopped_requeued("local") in log


def test_work_with_nothing_to_save_is_given_back_at_once(worker, granted, fake_engine, stop):
    def loading(worker, run, devices, reporter):
        stop.request()  # while the model loads: no step to save
        assert stop.exited.wait(10)
        reporter.started(total_steps=3)
        return TrainingResult(final_step=0, first_loss=None, last_loss=None, stopped_early=True)

    stop.grace_s = 600.0  # waited for, the engine's wait for the exit would fail
    fake_engine(loading)
    run_id, claim = granted()
    assert leased_work.execute(worker, "run", run_id, claim["id"]) == "stopped: lease lost"
    assert worker.store.get(run_id)["status"] == RunStatus.QUEUED
    assert reasons.worker_stopped_requeued("local") in events(worker, run_id)


def test_a_run_stopped_just_after_a_snapshot_is_given_back_at_once_showing_that_step(
        worker, granted, fake_engine, stop, monkeypatch):
    """Nothing to save (its snapshot was just written): the watchdog gives it back at once, and
    writes the run's throttled progress first, so the QUEUED run shows the step its snapshot holds."""
    monkeypatch.setattr("services.trainer_worker.reporter.PROGRESS_EVERY_S", 3600.0)  # step 2 stays pending
    stop.grace_s = 600.0

    def scheduled_snapshot_then_sigterm(worker, run, devices, reporter):
        reporter.started(total_steps=4)
        for step in (1, 2):
            reporter.metrics({"step": step, "loss": 1.0})
        directory = worker.artifacts.scratch(f"runs/{run['id']}/snapshots/step-000002")
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "snapshot.json").write_text("{}")
        reporter.snapshot(step=2, key=f"runs/{run['id']}/snapshots/step-000002", directory=directory,
                          manifest={"layout": 2, "gpus": 1, "method": "sft", "engine": "sft-single",
                                    "precision": "fp32", "model": "m", "trainingState": {"format": "x"}},
                          final=False)
        stop.request()  # SIGTERM now: nothing trained since the snapshot
        assert stop.exited.wait(10)
        return TrainingResult(final_step=2, first_loss=1.0, last_loss=1.0, stopped_early=True)

    fake_engine(scheduled_snapshot_then_sigterm)
    run_id, claim = granted()
    leased_work.execute(worker, "run", run_id, claim["id"])
    run = worker.store.get(run_id)
    assert run["status"] == RunStatus.QUEUED
    assert run["progress"]["step"] == worker.store.get(run["latestSnapshot"])["step"] == 2
    assert reasons.worker_stopped_unsaved(600.0) not in events(worker, run_id)


def test_a_stop_requested_as_the_run_ends_leaves_it_ended(worker, granted, fake_engine, stop, monkeypatch):
    fake_engine(engine(None, None))
    real_move = run_job.fenced_move

    def stop_arrives_during_the_final_write(*args, **kwargs):
        stop.request()  # the watchdog waits for the task's final writes, then finds them done
        return real_move(*args, **kwargs)

    monkeypatch.setattr(run_job, "fenced_move", stop_arrives_during_the_final_write)
    run_id, claim = granted()
    assert leased_work.execute(worker, "run", run_id, claim["id"]) == RunStatus.SUCCEEDED
    time.sleep(0.2)
    assert not stop.exited.is_set() and worker.store.get(run_id)["status"] == RunStatus.SUCCEEDED
    assert reasons.worker_stopped_requeued("local") not in events(worker, run_id)


def test_sigterm_reaches_the_stop_at_once_even_in_the_middle_of_a_long_step(tmp_path):
    """A real process: `install_in_child`, work held, then a long computation in C that lets go of
    the GIL, as a training step's torch kernels do: Python runs no signal handler until it returns
    (minutes here). SIGTERM gives the work back through the wakeup pipe anyway, and the process
    ends with stopping.EXIT_CODE."""
    given = tmp_path / "given"
    script = f"""
import sys
from pathlib import Path
from services.trainer_worker import stopping
stop = stopping.install_in_child(grace_s=60)
stop.hold(stopping.Held(hand_back=lambda late: Path({str(given)!r}).write_text(str(late)),
                        stops_itself=lambda: False))
import hashlib
print("ready", flush=True)
hashlib.pbkdf2_hmac("sha256", b"p", b"s", 2 ** 31 - 1)  # minutes in C, without the GIL
"""
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=Path(__file__).resolve().parents[2],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=30) == stopping.EXIT_CODE
    finally:
        if proc.poll() is None:
            proc.kill()
    assert given.read_text() == "False"


def test_a_rank_ignores_sigterm_so_a_stop_to_the_group_does_not_kill_it():
    """A SIGTERM to the worker's process group (`training down`, systemd) must stop a multi-device
    run through the task's process, at a step boundary: a rank killed by it would fail the run."""
    from services.trainer_worker.engines.distributed import _rank_preexec

    child = subprocess.run([sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGTERM) is "
                            "signal.SIG_IGN)"], preexec_fn=_rank_preexec, capture_output=True, text=True, check=True)
    assert child.stdout.strip() == "True"


def test_an_engine_error_as_its_worker_stops_gives_the_run_back_instead_of_failing_it(
        worker, granted, fake_engine, stop):
    """The stop reached a process the engine needs (a rollout server in the worker's process group
    stops on SIGTERM): the step fails, and the run is given back from its latest snapshot."""
    def rollout_server_gone(reporter):
        stop.request()
        raise ConnectionRefusedError("the rollout server stopped")

    fake_engine(engine(None, rollout_server_gone))
    run_id, claim = granted()
    assert leased_work.execute(worker, "run", run_id, claim["id"]) == "requeued: worker stopping"
    run = worker.store.get(run_id)
    assert run["status"] == RunStatus.QUEUED and run.get("detail") is None
    log = events(worker, run_id)
    assert reasons.worker_stopped_unsaved(5.0) in log and reasons.worker_stopped_requeued("local") in log
    assert not stop.exited.is_set()
