"""The one reading of dataset rows (shared/data/datasets.py): a row's format, prompt and reference, and a
file read line by line exactly as the upload validated it."""

from __future__ import annotations

import json

import pytest

from shared.data.datasets import FORMATS, read_rows, row_format, row_prompt, row_reference, validate_jsonl
from shared.errors import ValidationFailed

USER = {"role": "user", "content": "q"}
SYSTEM = {"role": "system", "content": "be brief"}


@pytest.mark.parametrize("row, fmt, prompt, reference", [
    ({"messages": [SYSTEM, USER, {"role": "assistant", "content": "a"}]}, "chat", [SYSTEM, USER], "a"),
    # the last assistant message is the reference; earlier turns are prompt
    ({"messages": [USER, {"role": "assistant", "content": "a1"}, USER, {"role": "assistant", "content": "a2"}]},
     "chat", [USER, {"role": "assistant", "content": "a1"}, USER], "a2"),
    ({"messages": [USER]}, "chat", [USER], None),
    ({"prompt": "q", "completion": "a"}, "completion", "q", "a"),
    ({"prompt": [USER], "completion": [{"role": "assistant", "content": "a"}]}, "completion", [USER], "a"),
    ({"prompt": "q", "answer": "a"}, "prompt", "q", "a"),
    ({"prompt": "q", "answer": 4}, "prompt", "q", "4"),
    ({"prompt": [USER]}, "prompt", [USER], None),
    ({"answer": "a"}, None, None, "a"),
])
def test_a_rows_format_prompt_and_reference(row, fmt, prompt, reference):
    assert row_format(row) == fmt and (fmt is None or fmt in FORMATS)
    assert row_prompt(row) == prompt
    assert row_reference(row) == reference


def test_rows_keep_the_line_numbers_the_upload_named(tmp_path):
    path = tmp_path / "rows.jsonl"
    lines = [json.dumps({"prompt": "a", "completion": "b"}), "", "  ", json.dumps({"messages": [USER]}),
             json.dumps({"text": "x"})]
    path.write_text("\n".join(lines) + "\n")
    rows = read_rows(path)
    assert [(r.line, r.format) for r in rows] == [(1, "completion"), (4, "chat"), (5, None)]
    assert rows[0].fields == {"prompt": "a", "completion": "b"}
    report = validate_jsonl(path.read_bytes())
    assert [f["line"] for f in report.faults] == [4, 5]  # another format; no format


@pytest.mark.parametrize("line, message, field", [
    ("{not json", "dataset line 2 is not valid JSON: Expecting property name enclosed in double quotes at column 2",
     "(line)"),
    ("[1, 2]", "dataset line 2 must be a JSON object", "(line)"),
])
def test_a_line_that_is_no_row_is_refused_naming_it(tmp_path, line, message, field):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"prompt": "a"}) + "\n" + line + "\n")
    with pytest.raises(ValidationFailed) as refused:
        read_rows(path)
    assert refused.value.message == message and refused.value.details == {"line": 2, "field": field}
    fault = validate_jsonl(path.read_bytes()).faults[0]
    assert (fault["line"], fault["field"]) == (2, field) and message.endswith(fault["problem"])


def test_a_file_that_is_not_utf8_is_refused(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"prompt": "\xff"}\n')
    with pytest.raises(ValidationFailed, match=r"the dataset is not UTF-8 text \(byte 12\)"):
        read_rows(path)


def test_lines_are_split_at_newlines_only_so_strings_may_hold_other_line_breaks(tmp_path):
    """JSONL ends a row at "\\n" (with or without "\\r"); U+2028, U+2029 and U+0085 are characters a
    JSON string may hold unescaped, which str.splitlines would have cut rows at."""
    texts = ["one\u2028two", "three\u2029four", "five\x85six", "seven\u2028\u2029\x85", "eight"]
    rows = [json.dumps({"prompt": text, "completion": "c"}, ensure_ascii=False) for text in texts]
    data = ("\r\n".join(rows[:2]) + "\n" + "\n".join(rows[2:]) + "\r\n").encode()
    report = validate_jsonl(data)
    assert (report.rows, report.faults) == (5, [])
    path = tmp_path / "rows.jsonl"
    path.write_bytes(data)
    assert [(r.line, r.fields["prompt"]) for r in read_rows(path)] == list(enumerate(texts, start=1))


def test_a_row_holding_a_lone_surrogate_is_refused_naming_line_and_field(tmp_path):
    from shared import reasons

    data = b'{"prompt": "q", "completion": "a"}\n{"prompt": "q", "completion": "a\\udbff"}\n'
    fault = validate_jsonl(data).faults[0]
    assert fault == {"line": 2, "field": "completion", "problem": reasons.lone_surrogate(0xDBFF)}
    path = tmp_path / "rows.jsonl"
    path.write_bytes(data)
    with pytest.raises(ValidationFailed) as refused:
        read_rows(path)  # an engine reading a file stored before uploads were checked for them
    assert refused.value.message == f"dataset line 2, field completion, {reasons.lone_surrogate(0xDBFF)}"
    assert refused.value.details == {"line": 2, "field": "completion"}
