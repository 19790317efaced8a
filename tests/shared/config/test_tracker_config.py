"""The deployment config's `trackers:` section (shared/config/trackers.py): TensorBoard alone by
default, MLflow and W&B only when named, every bad setting refused with a sentence naming it."""

from __future__ import annotations

import pytest

from shared.config.deployment import EMBEDDED_DEFAULT, parse_config
from shared.config.trackers import MlflowSettings, TrackerSettings, WandbSettings, parse_trackers
from shared.errors import ValidationFailed


def test_by_default_runs_write_tensorboard_files_and_reach_nothing_else():
    config = parse_config(EMBEDDED_DEFAULT, env={})
    assert config.trackers == TrackerSettings(report_to=("tensorboard",), mlflow=None, wandb=None)
    assert parse_trackers({"reportTo": []}).report_to == ()


def test_a_config_names_mlflow_and_wandb_with_their_settings():
    config = parse_config({**EMBEDDED_DEFAULT, "trackers": {
        "reportTo": ["tensorboard", "mlflow", "wandb", "mlflow"],
        "mlflow": {"trackingUri": "http://mlflow:5000", "experiment": "sft"},
        "wandb": {"project": "trainer", "entity": "team", "mode": "offline"}}}, env={})
    assert config.trackers == TrackerSettings(
        report_to=("tensorboard", "mlflow", "wandb"),
        mlflow=MlflowSettings(tracking_uri="http://mlflow:5000", experiment="sft"),
        wandb=WandbSettings(project="trainer", entity="team", mode="offline"))
    assert parse_trackers({"reportTo": "mlflow", "mlflow": {"trackingUri": "file:///m"}}).mlflow.experiment == \
        "the-trainer"


@pytest.mark.parametrize("section, sentence", [
    ("tensorboard", "deployment config: trackers must be a mapping (reportTo, mlflow, wandb)"),
    ({"reportTo": ["comet"]},
     "deployment config: trackers.reportTo names comet, which is not a tracker (tensorboard, mlflow, wandb)"),
    ({"reportTo": [1]}, "deployment config: trackers.reportTo must be a list of tracker names "
                        "(tensorboard, mlflow, wandb)"),
    ({"report_to": ["mlflow"]},
     "deployment config: trackers.report_to is not a setting of trackers (reportTo, mlflow, wandb)"),
    ({"reportTo": ["mlflow"]}, "deployment config: trackers.mlflow must be set when trackers.reportTo names mlflow"),
    ({"reportTo": ["mlflow"], "mlflow": {"experiment": "x"}},
     "deployment config: trackers.mlflow.trackingUri must be a non-empty string"),
    ({"reportTo": ["mlflow"], "mlflow": {"trackingUri": "file:///m", "uri": "x"}},
     "deployment config: trackers.mlflow.uri is not a setting of mlflow (trackingUri, experiment)"),
    ({"reportTo": ["wandb"], "wandb": {"project": "p", "mode": "disabled"}},
     "deployment config: trackers.wandb.mode must be online or offline, not 'disabled'"),
    ({"reportTo": ["wandb"], "wandb": {"project": " "}},
     "deployment config: trackers.wandb.project must be a non-empty string"),
    ({"wandb": ["p"]}, "deployment config: trackers.wandb must be a mapping"),
])
def test_a_bad_tracker_setting_is_refused_naming_it(section, sentence):
    with pytest.raises(ValidationFailed) as refused:
        parse_config({**EMBEDDED_DEFAULT, "trackers": section}, env={})
    assert str(refused.value) == sentence
