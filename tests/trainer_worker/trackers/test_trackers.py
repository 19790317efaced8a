"""Trackers (services/trainer_worker/trackers): a real tiny SFT run, paused after step 4 and resumed
to step 6, then re-queued as if its worker had been lost after the end (it trains steps 5-6 again),
with every tracker this Python has attached. Read back: TensorBoard events with the tensorboard
package, MLflow from a local file store, W&B from its offline run; each holds steps 1..6 once,
under the metrics API's names."""

from __future__ import annotations

import os

import pytest

from services.trainer_worker.engines.base import Restore
from services.trainer_worker.engines.sft import run_sft
from services.trainer_worker.trackers import Trackers, missing_packages
from services.trainer_worker.trackers.scalars import SentSteps, scalars_of
from shared import reasons
from shared.config.trackers import MlflowSettings, TrackerSettings, WandbSettings, parse_trackers
from shared.store.artifacts import ArtifactRoot, tensorboard_key, wandb_key
from tests.trainer_worker.doubles import RecordingReporter, make_job

STEPS = 6
RUN_ID = "run-tracked"
INSTALLED = [name for name in ("mlflow", "wandb") if not missing_packages(TrackerSettings(report_to=(name,)))]


class TrackingReporter(RecordingReporter):
    """RecordingReporter that hands each point to the trackers, as the worker's RunReporter does
    right after it stores the point in Redis."""

    def __init__(self, attempt: int, **kwargs):
        super().__init__(**kwargs)
        self.attempt = attempt
        self.trackers: Trackers | None = None

    def metrics(self, point: dict) -> None:
        point = {**point, "attempt": self.attempt}
        super().metrics(point)
        self.trackers.log(point)


@pytest.fixture(scope="module")
def tracked(model_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("tracked")
    artifacts = ArtifactRoot(root / "artifacts")
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"  # mlflow 3 keeps its file store behind this switch
    os.environ["WANDB_SILENT"] = "true"
    settings = TrackerSettings(report_to=("tensorboard", *INSTALLED),
                               mlflow=MlflowSettings(tracking_uri=(root / "mlruns").as_uri(), experiment="tests"),
                               wandb=WandbSettings(project="tests", mode="offline"))
    job_dir = root / "work"
    series: list[dict] = []  # the run's metrics series, as Redis would hold it

    def train(number: int, restore: Restore | None = None, **kwargs) -> TrackingReporter:
        run = {"id": RUN_ID, "workload": "team-a", "engine": "sft-single", "attempts": number,
               "plan": make_job(model_dir, job_dir).plan.to_dict()}
        reporter = TrackingReporter(number, **kwargs)
        reporter.trackers = Trackers(settings=settings, artifacts=artifacts, run=run, earlier=list(series),
                                     warn=lambda message: reporter.event(message, level="warn"))
        result = run_sft(make_job(model_dir, job_dir, maxSteps=STEPS, run_id=RUN_ID, restore=restore), reporter)
        reporter.trackers.close("PAUSED" if result.paused else "SUCCEEDED")
        series.extend(reporter.points)
        return reporter

    paused = train(0, stop_after_step=3, stop_with="pause")  # seen at the end of step 4
    resumed = train(1, restore=Restore("trainingState", paused.snapshot_at(4)))
    requeued = train(2, restore=Restore("trainingState", paused.snapshot_at(4)))  # steps 5-6 once more
    yield {"artifacts": artifacts, "root": root, "attempts": [paused, resumed, requeued], "series": series}
    os.environ.pop("MLFLOW_ALLOW_FILE_STORE", None)


def first_attempt_values(series: list[dict], name: str) -> list[tuple[int, float]]:
    seen: dict[int, float] = {}
    for point in series:
        if name in point and point["step"] not in seen:
            seen[point["step"]] = point[name]
    return sorted(seen.items())


def test_the_attempts_trained_what_the_scenario_says(tracked):
    paused, resumed, requeued = tracked["attempts"]
    assert [p["step"] for p in paused.points] == [1, 2, 3, 4]
    assert [p["step"] for p in resumed.points] == [5, 6]
    assert [p["step"] for p in requeued.points] == [5, 6]
    assert all(level != "warn" for r in tracked["attempts"] for level, _ in r.events), [r.events for r in
                                                                                        tracked["attempts"]]


def test_tensorboard_events_hold_each_step_once_under_the_metrics_api_names(tracked):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    folder = tracked["artifacts"].get_dir(tensorboard_key(RUN_ID))
    files = sorted(p.name for p in folder.iterdir())
    # one file per attempt that had something new to send: the re-queued one repeated steps 5-6 only
    assert len(files) == 2 and [f.rsplit(".", 1)[-1] for f in files] == ["attempt-0", "attempt-1"], files
    events = EventAccumulator(str(folder))
    events.Reload()
    assert {"loss", "learningRate", "gradNorm", "tokensPerSecond", "epoch"} <= set(events.Tags()["scalars"])
    for name in ("loss", "learningRate", "gradNorm"):
        got = [(e.step, e.value) for e in events.Scalars(name)]
        expected = first_attempt_values(tracked["series"], name)
        assert [s for s, _ in got] == list(range(1, STEPS + 1)), name
        assert [v for _, v in got] == pytest.approx([v for _, v in expected], rel=1e-6), name


@pytest.mark.skipif("mlflow" not in INSTALLED, reason="mlflow is not installed (the trackers extra)")
def test_mlflow_holds_one_run_with_each_step_once_and_the_plan_as_params(tracked):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=(tracked["root"] / "mlruns").as_uri())
    experiment = client.get_experiment_by_name("tests")
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1  # the resumed and the re-queued attempts found it again by its tag
    run = runs[0]
    assert run.data.tags["trainer.run"] == RUN_ID and run.data.tags["trainer.workload"] == "team-a"
    assert run.info.status == "FINISHED" and run.info.run_name == RUN_ID
    assert run.data.params["hyperparameters.learningRate"] == "0.002"
    history = sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, "loss"))
    assert [s for s, _ in history] == list(range(1, STEPS + 1))
    assert [v for _, v in history] == pytest.approx([v for _, v in first_attempt_values(tracked["series"], "loss")])


@pytest.mark.skipif("wandb" not in INSTALLED, reason="wandb is not installed (the trackers extra)")
def test_wandb_offline_runs_lie_in_the_runs_artifacts_under_its_id(tracked):
    folder = tracked["artifacts"].get_dir(wandb_key(RUN_ID)) / "wandb"
    offline = sorted(p for p in folder.glob(f"offline-run-*-{RUN_ID}") if p.is_dir())
    assert len(offline) == 2  # one per attempt that sent something; `wandb sync` sends them as one run
    for directory in offline:
        assert (directory / f"run-{RUN_ID}.wandb").stat().st_size > 0


def test_a_point_becomes_scalars_under_its_api_names_nested_ones_joined():
    point = {"step": 3, "attempt": 1, "time": "2026-01-01T00:00:00Z", "loss": 0.5, "gradNorm": None,
             "reward": 0.25, "rewards": {"correct": {"mean": 0.5, "std": None}, "short": {"mean": 1}},
             "kl": float("nan"), "handoffBytes": 0, "note": "text", "flag": True}
    assert scalars_of(point) == {"loss": 0.5, "reward": 0.25, "rewards/correct/mean": 0.5,
                                 "rewards/short/mean": 1.0, "handoffBytes": 0.0}


def test_each_name_and_step_goes_out_once_and_validation_at_a_trained_step_still_does():
    sent = SentSteps([{"step": 1, "loss": 2.0}, {"step": 2, "loss": 1.5}])  # an earlier attempt's
    assert sent.fresh({"step": 2, "loss": 1.5}) == {}  # re-trained after a lost worker
    assert sent.fresh({"step": 2, "validationLoss": 1.7}) == {"validationLoss": 1.7}
    assert sent.fresh({"step": 3, "loss": 1.2}) == {"loss": 1.2}


def test_a_failing_tracker_warns_once_and_the_others_go_on(tmp_path):
    warnings: list[str] = []
    artifacts = ArtifactRoot(tmp_path)
    trackers = Trackers(settings=TrackerSettings(), artifacts=artifacts, run={"id": "run-x", "attempts": 0},
                        earlier=[], warn=warnings.append)

    class Broken:
        name = "mlflow"

        def log(self, step, scalars):
            raise ConnectionError("tracking server refused")

        def close(self, outcome):
            raise AssertionError("a dropped tracker is not closed")

    trackers.log({"step": 1, "loss": 1.0})
    trackers.open["mlflow"] = Broken()
    trackers.log({"step": 2, "loss": 0.9})
    trackers.log({"step": 3, "loss": 0.8})
    trackers.close("SUCCEEDED")
    assert warnings == [reasons.tracker_failed("mlflow", "stopped at step 2",
                                               "tracking server refused")]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(artifacts.get_dir(tensorboard_key("run-x"))))
    events.Reload()
    assert [e.step for e in events.Scalars("loss")] == [1, 2, 3]


def test_a_worker_refuses_to_start_without_the_package_of_a_tracker_it_is_told_to_use(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "mlflow" else real(name))
    settings = parse_trackers({"reportTo": ["tensorboard", "mlflow"], "mlflow": {"trackingUri": "file:///x"}})
    assert missing_packages(settings) == [
        "deployment config: trackers.reportTo names mlflow, but this worker's Python has no mlflow package "
        "(it comes with the trackers extra: pip install 'the-trainer[trackers]')"]
