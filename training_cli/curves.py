"""The small loss curve `runs watch` draws beside its bar: a sparkline of the run's training loss
(and, for grpo, its reward) by step, from the run's metrics series (GET /v1/runs/ID/metrics).

A step trained twice (a run re-queued after its worker was lost trains again from its snapshot)
is drawn once, with the value of its latest attempt; validation points (no `loss`) are left out."""

from __future__ import annotations

from typing import Any, Iterable

BLOCKS = "▁▂▃▄▅▆▇█"
WIDTH = 24  # characters: at most this many columns, each the mean of its steps


def sparkline(values: list[float], width: int = WIDTH) -> str:
    """`values` as one line of block characters, lowest ▁ to highest █, at most `width` long."""
    if not values:
        return ""
    if len(values) > width:  # each column the mean of an equal share of the steps, in order
        values = [sum(part) / len(part) for part in
                  (values[i * len(values) // width:(i + 1) * len(values) // width] for i in range(width))]
    low, high = min(values), max(values)
    if high - low <= 1e-12 * max(abs(high), 1.0):
        return BLOCKS[len(BLOCKS) // 2] * len(values)
    top = len(BLOCKS) - 1
    return "".join(BLOCKS[round((v - low) / (high - low) * top)] for v in values)


class Curve:
    """One metric's values by step, drawn as a sparkline."""

    def __init__(self, name: str):
        self.name = name
        self.by_step: dict[int, float] = {}

    def add(self, points: Iterable[dict[str, Any]]) -> None:
        for point in points:
            value = point.get(self.name)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and "step" in point:
                self.by_step[int(point["step"])] = float(value)  # a later attempt's value replaces

    def line(self, width: int = WIDTH) -> str:
        return sparkline([self.by_step[s] for s in sorted(self.by_step)], width)


class RunCurves:
    """What `runs watch` draws: the loss curve, and the reward curve once points carry a reward."""

    def __init__(self):
        self.loss, self.reward = Curve("loss"), Curve("reward")

    def add(self, points: Iterable[dict[str, Any]]) -> None:
        points = list(points)
        self.loss.add(points)
        self.reward.add(points)

    def drawn(self) -> list[Curve]:
        return [self.loss, self.reward]

    def text(self, width: int = WIDTH) -> str:
        shown = [f"{curve.name} {curve.line(width)}" for curve in (self.loss, self.reward) if curve.by_step]
        return "  ".join(shown)
