"""A run whose engine takes no step never ends SUCCEEDED in silence (issue 30). `leased_work.execute`
runs as the Celery task calls it, on real Redis, its claim granted and dispatched by the scheduler's
own code. The one stand-in: `_run_engine` is replaced by a function that does what the real engine
does when it starts at its plan's last step (tests/trainer_worker/engines/test_steps_trained.py shows
the real one raising it): it raises NothingToTrain, or returns a result of no step."""

from __future__ import annotations

import pytest

from services.trainer_worker import leased_work, run_job
from services.trainer_worker.engines.base import NothingToTrain, TrainingResult
from shared.store.ids import Kind, new_id
from tests.trainer_worker.granted_runs import grant_run, live_worker

NO_STEP = ("training failed: there is no step to train: it starts at step 100, and its plan ends at step 50. "
           "maxSteps is the step a run ends at; a trainingState branch counts on from its snapshot's step")


@pytest.fixture
def worker(config):
    return live_worker(config)


@pytest.fixture
def granted(worker, config):
    def make(*, snapshots: list[dict] = ()) -> tuple[str, dict]:
        run_id = new_id(Kind.RUN)
        for snap in snapshots:
            worker.store.create({"kind": "snapshot", "run": run_id, "workload": "runs", **snap})
        return grant_run(worker, config, run_id, attempts=1, snapshots=[s["id"] for s in snapshots])

    return make


def engine_starting_at(step: int, end: int):
    def engine(worker, run, devices, reporter):
        reporter.started(total_steps=end)  # as kit.ReporterCallback does before it looks
        raise NothingToTrain(start_step=step, end_step=end)

    return engine


def test_a_branch_that_starts_past_its_plans_end_fails_saying_why(worker, granted, monkeypatch):
    monkeypatch.setattr(run_job, "_run_engine", engine_starting_at(100, 50))
    run_id, claim = granted()
    assert leased_work.execute(worker, "run", run_id, claim["id"]) == "FAILED"
    run = worker.store.get(run_id)
    assert run["detail"] == NO_STEP
    assert [(e["level"], e["message"]) for e in worker.store.events(run_id)][-1] == ("error", NO_STEP)


def test_an_engine_result_of_no_step_is_not_a_success_either(worker, granted, monkeypatch):
    monkeypatch.setattr(run_job, "_run_engine", lambda *args: TrainingResult(
        final_step=100, first_loss=None, last_loss=None, stopped_early=False, start_step=100))
    run_id, claim = granted()
    assert leased_work.execute(worker, "run", run_id, claim["id"]) == "FAILED"
    assert worker.store.get(run_id)["detail"] == NO_STEP.replace("its plan ends at step 50", "its plan ends at step 100")


def test_a_resume_whose_own_snapshot_is_its_last_step_ends_succeeded_and_says_so(worker, granted, monkeypatch):
    """Its worker was lost after writing the final snapshot and before ending the run: every step
    was trained, by the attempt before."""
    monkeypatch.setattr(run_job, "_run_engine", engine_starting_at(50, 50))
    snap = {"id": new_id(Kind.SNAPSHOT), "step": 50, "final": True,
            "contents": {"weights": {"format": "peft-safetensors"}, "trainingState": {"format": "hf-trainer"}}}
    run_id, claim = granted(snapshots=[snap])
    assert leased_work.execute(worker, "run", run_id, claim["id"]) == "SUCCEEDED"
    run = worker.store.get(run_id)
    assert run["detail"] is None
    assert ("warn", "nothing left to train: this run's own snapshot of step 50 is already at its last step (its "
                    "previous worker stopped after writing it); it ends SUCCEEDED with no new step") in [
        (e["level"], e["message"]) for e in worker.store.events(run_id)]
