"""The loss curve of `runs watch` (training_cli/curves.py): a sparkline by step beside the bar."""

from __future__ import annotations

from tests.training_cli.test_output import _run
from training_cli.curves import RunCurves, sparkline


def test_a_sparkline_runs_from_the_lowest_to_the_highest_block():
    assert sparkline([4.0, 3.0, 2.0, 1.0, 0.0, 1.0, 2.0, 3.0]) == "█▆▅▃▁▃▅▆"
    assert sparkline([]) == "" and sparkline([2.0, 2.0, 2.0]) == "▅▅▅"


def test_a_long_series_is_drawn_as_the_means_of_equal_shares():
    line = sparkline([float(v) for v in range(100, 0, -1)], width=10)
    assert len(line) == 10 and line[0] == "█" and line[-1] == "▁"
    assert list(line) == sorted(line, reverse=True)


def test_a_step_trained_twice_is_drawn_once_and_validation_points_are_left_out():
    curves = RunCurves()
    curves.add([{"step": 1, "loss": 3.0, "attempt": 0}, {"step": 2, "loss": 2.0, "attempt": 0},
                {"step": 2, "validationLoss": 9.0}])
    curves.add([{"step": 2, "loss": 2.5, "attempt": 1}, {"step": 3, "loss": 1.0, "attempt": 1}])
    assert curves.loss.by_step == {1: 3.0, 2: 2.5, 3: 1.0}
    assert curves.text() == "loss █▆▁"
    curves.add([{"step": 4, "loss": 1.0, "reward": 0.5}, {"step": 5, "loss": 1.0, "reward": 1.0}])
    assert curves.text() == "loss █▆▁▁▁  reward ▁█"


def test_runs_watch_draws_the_loss_curve_beside_the_bar(training, api):
    run = _run(api)
    result = training("runs", "watch", run["id"])
    assert result.exit_code == 0, result.output
    losses = [p["loss"] for p in api.state["metrics"][run["id"]]]
    assert len(losses) >= 2 and f"loss {sparkline(losses)}" in result.output
