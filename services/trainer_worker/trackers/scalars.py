"""A metrics point as trackers take it: its numbers under the metrics API's own names, nested ones
joined by `/` (`rewards/correct/mean`), and each (name, step) sent once per run.

A run re-queued after its worker was lost trains again from its newest snapshot, so the steps
after it are reported twice in its series (each point says its `attempt`). Training resumes
exactly, so those points repeat what was already sent: a tracker gets each name at each step once,
from the first attempt that reached it, and a resumed or re-queued run continues the same steps."""

from __future__ import annotations

import math
from typing import Any, Iterable

MAX_PARAM_CHARS = 6000  # MLflow refuses longer param values
# What a point carries that is not a metric: its x axis and where it came from.
NOT_METRICS = frozenset({"step", "attempt", "time"})


def scalars_of(point: dict[str, Any]) -> dict[str, float]:
    """The point's numbers by name; None (a metric this step does not have) and text left out."""
    found: dict[str, float] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{prefix}/{key}" if prefix else str(key), inner)
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            found[prefix] = float(value)

    walk("", {k: v for k, v in point.items() if k not in NOT_METRICS})
    return found


class SentSteps:
    """The highest step each metric name was sent at, so that no (name, step) goes out twice."""

    def __init__(self, earlier: Iterable[dict[str, Any]] = ()):
        self.highest: dict[str, int] = {}
        for point in earlier:
            self.fresh(point)

    def fresh(self, point: dict[str, Any]) -> dict[str, float]:
        """The point's scalars not sent yet at its step (and counts them as sent)."""
        step = int(point.get("step") or 0)
        fresh = {name: value for name, value in scalars_of(point).items() if step > self.highest.get(name, -1)}
        for name in fresh:
            self.highest[name] = step
        return fresh


def flat_params(value: Any, prefix: str = "") -> dict[str, str]:
    """A plan as MLflow params (and W&B config keys): `hyperparameters.learningRate` -> "0.0002"."""
    if isinstance(value, dict):
        found: dict[str, str] = {}
        for key, inner in value.items():
            found.update(flat_params(inner, f"{prefix}.{key}" if prefix else str(key)))
        return found
    return {prefix: str(value)[:MAX_PARAM_CHARS]} if value is not None and prefix else {}
