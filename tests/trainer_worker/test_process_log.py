"""A run's process log (issue 30): what its libraries logged, its events and metric points and, when
it fails, the traceback, kept bounded (its tail) in the artifact store, one file per worker process.

`leased_work.execute` runs as the Celery task calls it, on real Redis and a real artifact root; the one
stand-in is `_run_engine`, replaced by a function that logs as transformers and Python's warnings do
and then returns or raises (the real engines' output: tests/e2e/test_run_through_services.py)."""

from __future__ import annotations

import logging
import warnings

import pytest

from services.scheduler.dispatch import dispatch_granted
from services.trainer_worker import leased_work, run_job
from services.trainer_worker.node_worker import Worker
from services.trainer_worker.engines.base import TrainingResult
from services.trainer_worker.process_log import ProcessLog
from shared.artifacts import ArtifactRoot
from shared.claims.queue import ClaimQueue
from shared.ids import Kind, new_id
from shared.process_logs import MAX_PROCESSES_SHOWN, process_log
from tests.claim_fixtures import RecordingSender
from tests.conftest import mark_nodes_alive


@pytest.fixture
def worker(config):
    worker = Worker(config, "local")
    mark_nodes_alive(worker.redis, worker.keys, config)
    return worker


@pytest.fixture
def granted(worker, config):
    def make() -> tuple[str, dict]:
        run_id = new_id(Kind.RUN)
        worker.store.create({"id": run_id, "kind": "run", "status": "QUEUED", "workload": "runs", "pool": "default",
                             "gpus": 1, "scheduling": None, "plan": {}, "attempts": 0, "cancelRequested": False,
                             "progress": {"step": 0}})
        queue = ClaimQueue(worker.redis, worker.keys, config=config)
        claim = queue.submit(kind="run", resource_id=run_id, pool="default", gpus=1, workload="runs")
        queue.grant_pass(config, "default")
        dispatch_granted(queue=queue, store=worker.store, celery_app=RecordingSender(), config=config)
        return run_id, queue.get(claim["id"])

    return make


def engine_that_logs(then):
    def engine(worker, run, devices, reporter):
        reporter.started(total_steps=2)
        logging.getLogger("transformers.trainer").warning("a line transformers logged")
        warnings.warn("a warning a library gave", UserWarning)
        reporter.metrics({"step": 1, "loss": 1.5, "learningRate": 0.002})
        reporter.metrics({"step": 2, "loss": 1.25, "learningRate": 0.002})
        return then()

    return engine


def test_a_failed_runs_process_log_holds_what_its_libraries_said_and_the_traceback(worker, granted, monkeypatch):
    def fail():
        raise ValueError("num_samples should be a positive integer value, but got num_samples=0")

    monkeypatch.setattr(run_job, "_run_engine", engine_that_logs(fail))
    run_id, claim = granted()
    assert leased_work.execute(worker, "run", run_id, claim["id"]) == "FAILED"
    text = process_log(worker.artifacts, run_id).decode()
    assert f"worker process {worker.holder} takes the run (attempt 0)" in text
    assert "WARNING transformers.trainer: a line transformers logged" in text
    assert text.count("UserWarning: a warning a library gave") == 1  # once, though it reaches the root logger too
    assert '"step": 2, "loss": 1.25' in text
    assert "Traceback (most recent call last)" in text
    assert "ValueError: num_samples should be a positive integer value, but got num_samples=0" in text
    assert "ERROR training failed: no row is left to train on" in text  # its events, as they were written
    # the handlers are gone with the run: nothing logged later lands in its log
    logging.getLogger("transformers").warning("after the run")
    assert "after the run" not in process_log(worker.artifacts, run_id).decode()


def test_each_worker_process_keeps_its_own_log(worker, granted, monkeypatch):
    monkeypatch.setattr(run_job, "_run_engine", engine_that_logs(lambda: TrainingResult(
        final_step=2, first_loss=1.5, last_loss=1.25, stopped_early=False)))
    run_id, claim = granted()
    assert leased_work.execute(worker, "run", run_id, claim["id"]) == "SUCCEEDED"
    text = process_log(worker.artifacts, run_id).decode()
    assert "INFO succeeded at step 2: loss 1.5000 -> 1.2500" in text and "Traceback" not in text


def test_a_log_keeps_its_tail_and_says_what_was_cut(tmp_path):
    log = ProcessLog(ArtifactRoot(tmp_path), "run-x", max_bytes=4096)
    for i in range(1000):
        log.write(f"line {i:04d} " + "x" * 40)
    log.flush()
    text = (tmp_path / log.key).read_text()
    first, *lines = text.splitlines()
    assert first.startswith("[the first ") and first.endswith(
        " bytes of this process's log were cut: it keeps its last 4096 bytes]")
    assert int(first.split()[2]) == log.cut_bytes > 0
    assert len(text.encode()) - len(first) - 1 <= 4096
    assert lines[-1].endswith("line 0999 " + "x" * 40)


def test_the_api_reader_shows_the_last_processes(tmp_path):
    artifacts = ArtifactRoot(tmp_path)
    assert process_log(artifacts, "run-y") is None
    for i in range(MAX_PROCESSES_SHOWN + 2):
        artifacts.put_file(f"runs/run-y/process-log/2026120{i}T000000.000000Z.log", f"process {i}\n".encode())
    text = process_log(artifacts, "run-y").decode()
    assert text.splitlines() == [
        f"[2 earlier process log(s) of this run are left out: the last {MAX_PROCESSES_SHOWN} are shown]",
        *[f"process {i}" for i in range(2, MAX_PROCESSES_SHOWN + 2)]]
