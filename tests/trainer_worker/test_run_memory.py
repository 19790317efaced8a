"""A run's memory (issue 29 item 2): the estimate beside the measured peak per rank, and a warn event
when the peak is above the estimate. The comparison as plain Python; the reporter against real Redis;
a real tiny run through the real reporter with its estimate forced low."""
# ruff: noqa: F811  (the claim fixtures are imported by name, then asked for as arguments)

from __future__ import annotations

import structlog

from services.trainer_worker.engines import kit
from services.trainer_worker.engines.peak_memory import RSS, rank_peak
from services.trainer_worker.lease import Lease
from services.trainer_worker.reporter import RunReporter, peak_above_estimate, with_memory_report
from shared import reasons
from shared.artifacts import ArtifactRoot
from shared.ids import Kind, new_id
from shared.states import RunStatus
from tests.claim_fixtures import keys, prefix, redis_client, store  # noqa: F401  (fixtures)
from tests.trainer_worker.doubles import RecordingReporter, make_job

GIB = 1024**3


def test_the_peak_is_compared_with_the_estimate_rank_by_rank():
    memory = with_memory_report(None, estimate_gib=1.0, activation_checkpointing=False, measured_as=RSS)
    assert memory == {"estimateGiB": 1.0, "peakGiB": None, "ranks": [], "activationCheckpointing": False,
                      "measuredAs": RSS}
    assert peak_above_estimate(memory) is None  # nothing measured yet
    within = with_memory_report(memory, ranks=[rank_peak(0, trainer_bytes=GIB // 2), rank_peak(1, trainer_bytes=GIB)])
    assert within["peakGiB"] == 1.0 and peak_above_estimate(within) is None  # at the estimate is within it
    over = with_memory_report(memory, ranks=[rank_peak(0, trainer_bytes=GIB // 2),
                                             rank_peak(1, trainer_bytes=GIB, server_bytes=GIB // 4)])
    assert over["peakGiB"] == 1.25 and peak_above_estimate(over)["rank"] == 1
    assert over["ranks"][1] == {"rank": 1, "peakGiB": 1.25, "trainerGiB": 1.0, "rolloutServerGiB": 0.25}
    assert peak_above_estimate(with_memory_report(None, ranks=over["ranks"])) is None  # no estimate: no verdict
    # a new attempt's estimate starts its measurement afresh
    assert with_memory_report(over, estimate_gib=2.0)["ranks"] == []


def test_the_warn_event_word_for_word():
    assert reasons.memory_peak_above_estimate(peak_gib=3.41, estimate_gib=1.414, rank=0, measured_as=RSS) == (
        "peak memory 3.41 GiB (rank 0, peak resident set) is above the estimate of 1.41 GiB: "
        "the estimate is too low for this plan")


def _reporter(store, tmp_path) -> RunReporter:
    run_id = store.create({"id": new_id(Kind.RUN), "kind": "run", "status": RunStatus.RUNNING.value,
                           "workload": "runs", "progress": {"step": 0}, "scheduling": {}, "fence": None,
                           "attempts": 0, "snapshots": [], "memory": {"estimateGiB": None, "peakGiB": None,
                                                                      "ranks": []}})["id"]
    lease = Lease(store.redis, store.keys, run_id, "node/host/1")
    assert lease.acquire()
    run = store.update(run_id, lambda doc: {**doc, "fence": lease.fence})
    return RunReporter(store=store, artifacts=ArtifactRoot(tmp_path / "artifacts"), run=run, lease=lease,
                       log=structlog.get_logger())


def test_the_reporter_stores_both_numbers_and_warns_only_above(store, tmp_path):
    within, over = _reporter(store, tmp_path), _reporter(store, tmp_path)
    for reporter, peak in ((within, GIB), (over, 2 * GIB)):
        reporter.memory(estimate_gib=1.5, activation_checkpointing=False, measured_as=RSS)
        reporter.memory(ranks=[rank_peak(0, trainer_bytes=peak)])
    assert store.get(within.run_id)["memory"]["peakGiB"] == 1.0
    assert [e for e in store.events(within.run_id) if e["level"] == "warn"] == []
    assert store.get(over.run_id)["memory"] == {"estimateGiB": 1.5, "peakGiB": 2.0, "activationCheckpointing": False,
                                                "measuredAs": RSS, "ranks": [rank_peak(0, trainer_bytes=2 * GIB)]}
    assert [(e["level"], e["message"]) for e in store.events(over.run_id)] == [
        ("warn", reasons.memory_peak_above_estimate(peak_gib=2.0, estimate_gib=1.5, rank=0, measured_as=RSS))]


def test_a_real_tiny_run_reports_its_estimate_and_a_peak_within_it(model_dir, tmp_path):
    reporter = RecordingReporter()
    kit_job = make_job(model_dir, tmp_path, maxSteps=2, every_steps=None)
    from services.trainer_worker.engines import train

    train(kit_job, reporter)
    estimate, peaks = reporter.memory_reports
    assert estimate["activation_checkpointing"] is False and estimate["measured_as"] == RSS
    (rank,) = peaks["ranks"]
    assert rank["rank"] == 0 and rank["rolloutServerGiB"] is None and 0.1 < rank["peakGiB"] == rank["trainerGiB"]
    assert estimate["estimate_gib"] >= rank["peakGiB"]  # never below what the run really used


def test_a_run_whose_estimate_is_forced_low_warns_through_the_real_reporter(model_dir, tmp_path, store,
                                                                           monkeypatch):
    monkeypatch.setattr(kit, "training_memory_gib", lambda *args, **kwargs: 0.01)  # far below any real process
    reporter = _reporter(store, tmp_path)
    monkeypatch.setattr(reporter, "stop_request", lambda: None)
    reporter.started = lambda *, total_steps: None  # the run is RUNNING already: no move to make
    from services.trainer_worker.engines import train

    train(make_job(model_dir, tmp_path / "work", maxSteps=1, every_steps=None), reporter)
    memory = store.get(reporter.run_id)["memory"]
    assert memory["estimateGiB"] == 0.01 and memory["peakGiB"] > 0.1
    warned = [e["message"] for e in store.events(reporter.run_id) if e["level"] == "warn"]
    assert warned == [reasons.memory_peak_above_estimate(peak_gib=memory["peakGiB"], estimate_gib=0.01, rank=0,
                                                         measured_as=RSS)]
