"""How a list fits a terminal (training_cli/columns.py) and how the live line of `runs watch` does
(training_cli/watch.progress_lines): the rules, on tables built here. The real CLI in a real
terminal is tests/training_cli/test_terminal_widths.py."""

from __future__ import annotations

import pytest

from training_cli.columns import WIDE, Col, render
from training_cli.curves import RunCurves
from training_cli.watch import progress_lines

RUN_ID = "run-40c3a1b2c3d4e5f60718"
ROWS = [[RUN_ID, "a rather long name for a run, as people write them", "RUNNING", "120/400", "0.4312", "builtin/tiny"]]
COLUMNS = [Col("ID", keep=True), Col("Name", keep=True, cut=True), "Status", "Progress", "Loss", Col("Model", cut=True)]


def test_a_pipe_gets_every_column_ids_whole_and_nothing_cut():
    header, row = render(COLUMNS, ROWS, None)
    assert header.split() == ["ID", "Name", "Status", "Progress", "Loss", "Model"]
    assert row.startswith(RUN_ID + "   a rather long name for a run, as people write them   RUNNING")


@pytest.mark.parametrize("limit", [40, 60, 80, 120])
def test_a_terminal_gets_lines_no_wider_than_itself_short_ids_and_names_cut_before_numbers(limit):
    header, row = render(COLUMNS, ROWS, limit)
    assert max(len(header), len(row)) <= limit
    assert row.startswith("run-40c3a1b2   ") and RUN_ID not in row  # short: a prefix the CLI takes back
    if limit == 80:  # a long name gives way before the numbers a run is read for
        assert header.split() == ["ID", "Name", "Status", "Progress", "Loss"] and "…" in row
    if limit == 120:  # room for all of it
        assert header.split() == ["ID", "Name", "Status", "Progress", "Loss", "Model"] and "…" not in row
    if limit == 40:  # the last columns go first; ID and Name never go
        assert header.split()[:2] == ["ID", "Name"] and "Model" not in header


def test_wide_shows_wide_columns_and_whole_ids_at_any_width():
    token = WIDE.set(True)
    try:
        header, row = render(COLUMNS + [Col("Workload", wide=True)], [ROWS[0] + ["runs"]], 80)
    finally:
        WIDE.reset(token)
    assert header.split()[-1] == "Workload" and RUN_ID in row and "…" not in row


def test_wide_only_columns_stay_out_of_the_default_table():
    header, _ = render(COLUMNS + [Col("Workload", wide=True)], [ROWS[0] + ["runs"]], None)
    assert "Workload" not in header


QUEUED = {"status": "QUEUED", "progress": {"step": 0, "totalSteps": None},
          "scheduling": {"waitingText": "held by endpoint ep-5ec24af665a6f57e9181 (builtin/tiny-qwen3, idle 1h05m); "
                                        "queued ahead: run run-aef784bce5258261b870 (1 GPU), run "
                                        "run-f224cf8885ad4bed0c39 (2 GPU)"}}


@pytest.mark.parametrize("width", [60, 80, 120])
def test_the_watch_line_fits_and_says_what_a_queued_run_waits_on_with_whole_short_ids(width):
    lines = [line.plain for line in progress_lines(QUEUED, RunCurves(), width)]
    assert all(len(line) <= width for line in lines), lines
    assert lines[0].startswith("QUEUED") and "━" in lines[0]
    said = " ".join(" ".join(lines[1:]).split())
    assert said == ("held by endpoint ep-5ec24af6 (builtin/tiny-qwen3, idle 1h05m); queued ahead: run run-aef784bc "
                    "(1 GPU), run run-f224cf88 (2 GPU)")


def test_the_grpo_line_keeps_its_numbers_and_draws_curves_where_they_fit():
    run = {"status": "RUNNING", "progress": {"step": 30, "totalSteps": 40, "loss": 0.01234, "reward": 0.4375,
                                             "tokensPerSecond": 1234.5, "etaSeconds": 65}}
    curves = RunCurves()
    curves.add([{"step": s, "loss": 1 / s, "reward": s / 40} for s in range(1, 31)])
    narrow, wide = (progress_lines(run, curves, width)[0].plain for width in (80, 160))
    assert len(narrow) <= 80 and "30/40  loss 0.01234  reward 0.4375  ETA 1m05s" in narrow
    assert len(wide) <= 160 and "loss █▄" in wide and "reward ▁" in wide and "1234.5 tok/s" in wide


def test_widths_are_terminal_cells_so_wide_characters_do_not_overflow():
    from rich.cells import cell_len

    rows = [[RUN_ID, "日本語の名前がとても長いランの名前です", "RUNNING"]]
    for limit in (30, 40, 60):
        lines = render([Col("ID", keep=True), Col("Name", keep=True, cut=True), "Status"], rows, limit)
        assert all(cell_len(line) <= limit for line in lines), (limit, lines)
