"""Where a deployment's runs send their metrics besides their own series (GET /v1/runs/RUN/metrics):
the `trackers:` section of the deployment config, checked when a service reads the config.

    trackers:
      reportTo: [tensorboard, mlflow, wandb]   # default [tensorboard]; [] sends them nowhere else
      mlflow: {trackingUri: URI, experiment: NAME}                 # needed when reportTo names mlflow
      wandb:  {project: NAME, entity: TEAM, mode: online|offline}  # needed when reportTo names wandb

TensorBoard event files go into each run's artifacts (`runs/RUN/tensorboard`, downloadable as a
.tar.gz). MLflow and Weights & Biases are off unless named here, and reach out to nothing unless
their settings do (a file: or sqlite: tracking URI, W&B offline mode stay on the machine). Their
packages are an optional extra (`pip install 'the-trainer[trackers]'`); a trainer worker checks they
are installed when it starts (services/trainer_worker/trackers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shared import reasons
from shared.errors import ValidationFailed

TENSORBOARD, MLFLOW, WANDB = "tensorboard", "mlflow", "wandb"
KNOWN_TRACKERS = (TENSORBOARD, MLFLOW, WANDB)
DEFAULT_REPORT_TO = (TENSORBOARD,)
DEFAULT_EXPERIMENT = "the-trainer"
WANDB_MODES = ("online", "offline")


@dataclass(frozen=True)
class MlflowSettings:
    tracking_uri: str  # http(s)://, file:, sqlite:, databricks... as mlflow.set_tracking_uri takes it
    experiment: str = DEFAULT_EXPERIMENT  # created on first use


@dataclass(frozen=True)
class WandbSettings:
    project: str
    entity: str | None = None  # the W&B team or user; None: the API key's default entity
    mode: str = "online"  # offline: written under the run's artifacts (runs/RUN/wandb), `wandb sync` later


@dataclass(frozen=True)
class TrackerSettings:
    report_to: tuple[str, ...] = DEFAULT_REPORT_TO
    mlflow: MlflowSettings | None = None
    wandb: WandbSettings | None = None


def _fail(path: str, problem: str) -> None:
    raise ValidationFailed(reasons.config_refused(path, problem), details={"field": path})


def _text(section: dict[str, Any], name: str, where: str, *, required: bool) -> str | None:
    value = section.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        _fail(f"{where}.{name}", reasons.CONFIG_NON_EMPTY_STRING)
    return value.strip()


def parse_trackers(raw: Any) -> TrackerSettings:
    """The `trackers:` section (None: TensorBoard only), or ValidationFailed naming the field."""
    if raw is None:
        return TrackerSettings()
    if not isinstance(raw, dict):
        _fail("trackers", reasons.CONFIG_TRACKERS)
    unknown = sorted(set(raw) - {"reportTo", "mlflow", "wandb"})
    if unknown:
        _fail(f"trackers.{unknown[0]}", reasons.CONFIG_TRACKERS_SETTING)
    report_to = raw.get("reportTo", list(DEFAULT_REPORT_TO))
    if isinstance(report_to, str):
        report_to = [report_to]
    if not isinstance(report_to, list) or not all(isinstance(name, str) for name in report_to):
        _fail("trackers.reportTo", reasons.config_trackers_list(list(KNOWN_TRACKERS)))
    for name in report_to:
        if name not in KNOWN_TRACKERS:
            _fail("trackers.reportTo", reasons.config_tracker_unknown(name, list(KNOWN_TRACKERS)))
    names = tuple(dict.fromkeys(report_to))  # order kept, repeats dropped
    return TrackerSettings(
        report_to=names,
        mlflow=_mlflow(raw.get("mlflow"), named=MLFLOW in names),
        wandb=_wandb(raw.get("wandb"), named=WANDB in names),
    )


def _section(value: Any, where: str, named: bool) -> dict[str, Any] | None:
    if value is None:
        if named:
            _fail(where, reasons.config_tracker_setting_needed(where.split('.')[-1]))
        return None
    if not isinstance(value, dict):
        _fail(where, reasons.CONFIG_NOT_A_MAPPING)
    return value


def _mlflow(value: Any, *, named: bool) -> MlflowSettings | None:
    section = _section(value, "trackers.mlflow", named)
    if section is None:
        return None
    unknown = sorted(set(section) - {"trackingUri", "experiment"})
    if unknown:
        _fail(f"trackers.mlflow.{unknown[0]}", reasons.CONFIG_MLFLOW_SETTING)
    return MlflowSettings(
        tracking_uri=_text(section, "trackingUri", "trackers.mlflow", required=True),
        experiment=_text(section, "experiment", "trackers.mlflow", required=False) or DEFAULT_EXPERIMENT,
    )


def _wandb(value: Any, *, named: bool) -> WandbSettings | None:
    section = _section(value, "trackers.wandb", named)
    if section is None:
        return None
    unknown = sorted(set(section) - {"project", "entity", "mode"})
    if unknown:
        _fail(f"trackers.wandb.{unknown[0]}", reasons.CONFIG_WANDB_SETTING)
    mode = section.get("mode", "online")
    if mode not in WANDB_MODES:
        _fail("trackers.wandb.mode", reasons.config_wandb_mode(mode))
    return WandbSettings(
        project=_text(section, "project", "trackers.wandb", required=True),
        entity=_text(section, "entity", "trackers.wandb", required=False),
        mode=mode,
    )
