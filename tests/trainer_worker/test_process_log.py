"""A run's process log (issue 30): what its libraries logged, its events and metric points and, when
it fails, the traceback, kept bounded (its tail) in the artifact store, one file per worker process.

`leased_work.execute` runs as the Celery task calls it, on real Redis and a real artifact root; the one
stand-in is `_run_engine`, replaced by a function that logs as transformers and Python's warnings do
and then returns or raises (the real engines' output: tests/e2e/test_run_through_services.py)."""

from __future__ import annotations

import logging
import warnings

import pytest

from services.trainer_worker import leased_work, run_job
from services.trainer_worker.engines.base import TrainingResult
from services.trainer_worker.process_log import ProcessLog
from shared.store.artifacts import ArtifactRoot
from shared.store.process_logs import MAX_PROCESSES_SHOWN, process_log
from tests.trainer_worker.granted_runs import grant_run, live_worker


@pytest.fixture
def worker(config):
    return live_worker(config)


@pytest.fixture
def granted(worker, config):
    return lambda: grant_run(worker, config)


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
