"""Alpaca and ShareGPT rows read as chat rows (shared/data/formats.py, issue 30), by the one
reader every engine and evaluation takes its rows from (shared/datasets.read_rows)."""

from __future__ import annotations

import json

import pytest

from services.trainer_worker.engines.sft import load_rows
from shared.data.datasets import read_rows, row_prompt, row_reference, validate_jsonl
from shared.data.formats import as_chat
from shared.errors import ValidationFailed


def test_an_alpaca_row_is_one_user_turn_and_the_answer():
    row = {"instruction": "Reverse the word", "input": "stone", "output": "enots", "system": "Be brief.",
           "history": [["Add: 1 + 1", "2"]], "answer": "enots"}
    chat, faults = as_chat(row)
    assert faults == [] and chat == {"messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Add: 1 + 1"}, {"role": "assistant", "content": "2"},
        {"role": "user", "content": "Reverse the word\nstone"}, {"role": "assistant", "content": "enots"},
    ], "answer": "enots"}  # the fields reward functions read are kept
    assert as_chat({"instruction": "Say hi", "input": "", "output": "hi"})[0]["messages"] == [
        {"role": "user", "content": "Say hi"}, {"role": "assistant", "content": "hi"}]


def test_a_sharegpt_row_is_its_turns():
    row = {"system": "Be brief.", "conversations": [{"from": "human", "value": "Add: 2 + 3"},
                                                    {"from": "gpt", "value": "5"}]}
    assert as_chat(row) == ({"messages": [{"role": "system", "content": "Be brief."},
                                          {"role": "user", "content": "Add: 2 + 3"},
                                          {"role": "assistant", "content": "5"}]}, [])
    openai_style = {"conversations": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]}
    assert as_chat(openai_style)[0]["messages"][1] == {"role": "assistant", "content": "Hello"}


def test_the_trainers_own_rows_are_left_alone():
    for row in ({"messages": [{"role": "user", "content": "x"}]}, {"prompt": "x", "completion": "y"},
                {"prompt": "x", "instruction": "not alpaca: it has a prompt", "output": "z"}):
        assert as_chat(row) == (row, [])


def test_every_reader_gets_the_chat_rows_and_the_upload_names_the_file_s_fields(tmp_path):
    path = tmp_path / "alpaca.jsonl"
    path.write_text(json.dumps({"instruction": "Add: 2 + 3", "output": "5"}) + "\n"
                    + json.dumps({"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}]})
                    + "\n")
    rows = read_rows(path)
    assert [r.format for r in rows] == ["chat", "chat"]
    assert row_prompt(rows[0].fields) == [{"role": "user", "content": "Add: 2 + 3"}]
    assert row_reference(rows[1].fields) == "Hello"
    assert load_rows(path)[0] == {"messages": [{"role": "user", "content": "Add: 2 + 3"},
                                               {"role": "assistant", "content": "5"}]}
    report = validate_jsonl(path.read_bytes())
    assert (report.rows, report.format, report.converted_from, report.faults) == (2, "chat", "alpaca", [])

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"conversations": [{"from": "robot", "value": "Hi"}]}) + "\n")
    with pytest.raises(ValidationFailed) as refused:
        read_rows(bad)
    assert refused.value.details == {"line": 1, "field": "conversations[0].from"}


def test_every_example_row_of_the_docs_is_accepted_in_the_format_it_shows():
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[3] / "docs" / "datasets.md").read_text()
    examples = re.findall(r"\*\*([\w/]+)\*\*.*?```json\n(.*?)\n```", doc, flags=re.S)
    shown = {name: validate_jsonl(row.encode()) for name, row in examples}
    assert set(shown) == {"chat", "prompt/completion", "prompt", "Alpaca", "ShareGPT"}
    assert all(report.rows == 1 and not report.faults for report in shown.values())
    assert [shown[n].format for n in ("chat", "prompt/completion", "prompt", "Alpaca", "ShareGPT")] == [
        "chat", "completion", "prompt", "chat", "chat"]
    assert (shown["Alpaca"].converted_from, shown["ShareGPT"].converted_from) == ("alpaca", "sharegpt")
