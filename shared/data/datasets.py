"""Dataset rows (SPEC 2.2): validation on upload, and the one reading of a row every engine takes
its view from.

Accepted rows: chat `messages`; `prompt` + `completion`; for reinforcement, `prompt` (text or
messages) plus any fields reward functions read. Alpaca rows (`instruction`/`input`/`output`) and
ShareGPT rows (`conversations`) are read as chat rows (shared/data/formats.py), on upload and
by every reader alike; the file is stored as uploaded. Every fault names its line and field; the first
20 are reported. A dataset has one format: the format of its first valid row.

A message's content is a string or a list of OpenAI content parts, text and images (shared/data/images.py:
`data:` URLs, each decoded and bounded on upload). A dataset whose rows hold an image is of
**modality** `image-text`, else `text` (`DatasetReport.modality`); the resolver matches it against
the model's.

What a row says, whoever reads it (SFT trains on it, GRPO prompts with it, an evaluation scores it):

- its **format** (`row_format`): chat, completion or prompt (FORMATS);
- its **prompt** (`row_prompt`): a chat row's messages before its last assistant message (all of
  them without one), else its `prompt`;
- its **reference** (`row_reference`), what a perfect completion says: a chat row's last assistant
  message, a completion row's completion, a prompt row's `answer` (None where the row gives none).

`read_rows(path)` reads a dataset file line by line as `validate_jsonl` does, so the line numbers an
engine names are the ones the upload named.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from shared import reasons
from shared.data import images
from shared.data.formats import as_chat, source_format
from shared.errors import ValidationFailed
from shared.schemas import json_values

# Every row format, in the order sentences name them.
CHAT, COMPLETION, PROMPT = "chat", "completion", "prompt"
FORMATS = (CHAT, COMPLETION, PROMPT)
MAX_FAULTS = 20
ROLES = ("system", "user", "assistant", "tool")
TEXT, IMAGE_TEXT = "text", "image-text"  # a dataset's modality, named as catalog models name theirs


@dataclass
class DatasetReport:
    rows: int = 0
    format: str | None = None  # one of FORMATS
    modality: str = TEXT  # IMAGE_TEXT once a valid row holds an image
    converted_from: str | None = None  # alpaca or sharegpt: the first valid row's, read as chat rows
    faults: list[dict[str, Any]] = field(default_factory=list)
    fault_count: int = 0

    def fault(self, line: int, field_: str, problem: str) -> None:
        self.fault_count += 1
        if len(self.faults) < MAX_FAULTS:
            self.faults.append({"line": line, "field": field_, "problem": problem})


def _messages_faults(messages: Any, field_: str) -> list[tuple[str, str]]:
    if not isinstance(messages, list) or not messages:
        return [(field_, "must be a non-empty list of {role, content} objects")]
    faults = []
    for i, msg in enumerate(messages):
        where = f"{field_}[{i}]"
        if not isinstance(msg, dict):
            faults.append((where, "must be an object with role and content"))
            continue
        if msg.get("role") not in ROLES:
            faults.append((f"{where}.role", f"must be one of {', '.join(ROLES)}"))
        content = msg.get("content")
        if images.is_parts(content):
            faults.extend(images.content_faults(content, f"{where}.content"))
        elif not isinstance(content, str):
            faults.append((f"{where}.content", "must be a string or a list of content parts"))
    count = images.image_count(messages)
    if count > images.MAX_IMAGES_PER_ROW:
        faults.append((field_, f"holds {count} images; the most in one row is {images.MAX_IMAGES_PER_ROW}"))
    return faults


def row_modality(row: dict[str, Any]) -> str:
    """IMAGE_TEXT for a row whose messages (or prompt messages) hold an image part, else TEXT."""
    for key in ("messages", "prompt", "completion"):
        if images.image_count(row.get(key)):
            return IMAGE_TEXT
    return TEXT


def row_format(row: dict[str, Any]) -> str | None:
    """chat, completion or prompt; None for a row that is none of them."""
    if "messages" in row:
        return CHAT
    if "prompt" in row and "completion" in row:
        return COMPLETION
    if "prompt" in row:
        return PROMPT
    return None


def split_chat(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
    """(the messages before the last assistant message, that message's content); without an
    assistant message, (every message, None)."""
    messages = list(messages)
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=None)
    if last is None:
        return messages, None
    return messages[:last], images.content_text(messages[last].get("content"))


def _content(value: Any) -> str | None:
    """A completion field: a string, or chat messages whose last one's content counts."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and isinstance(value[-1], dict):
        return images.content_text(value[-1].get("content"))
    return None


def row_prompt(row: dict[str, Any]) -> Any:
    """What the model is prompted with: text, or a list of chat messages (None: the row has no prompt)."""
    if row_format(row) == CHAT:
        return split_chat(row["messages"])[0]
    return row.get("prompt")


def row_reference(row: dict[str, Any]) -> str | None:
    """What a perfect completion of the row says, if the row says."""
    fmt = row_format(row)
    if fmt == CHAT:
        return split_chat(row["messages"])[1]
    if fmt == COMPLETION:
        return _content(row["completion"])
    answer = row.get("answer")
    return None if answer is None else str(answer)


@dataclass(frozen=True)
class Row:
    """One row of a dataset file: its line number (from 1) and its fields as written."""

    line: int
    fields: dict[str, Any]

    @property
    def format(self) -> str | None:
        return row_format(self.fields)


def _lines(text: str) -> Iterator[tuple[int, dict[str, Any] | None, tuple[str, str] | None]]:
    """(line number, row, None) for each non-blank line that is a JSON object, else (line number,
    None, (field, problem)). Upload validation and every reader of a dataset split lines alike:
    at "\n" (a "\r" before it dropped), as JSONL means; never at the other breaks str.splitlines
    knows (U+2028, U+2029, U+0085), which a JSON string may hold as they are. A row may nest
    json_values.MAX_DEPTH levels and hold no lone surrogate (the field is named)."""
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            row = json_values.loads(line)
        except json_values.JsonRefused as exc:
            yield number, None, (exc.field or "(line)", exc.problem)
            continue
        except json.JSONDecodeError as exc:
            yield number, None, ("(line)", f"is not valid JSON: {exc.msg} at column {exc.colno}")
            continue
        if not isinstance(row, dict):
            yield number, None, ("(line)", "must be a JSON object")
            continue
        yield number, row, None


def read_rows(path: Path | str) -> list[Row]:
    """Every row of a JSONL dataset file, whatever its format (each reader refuses what it cannot
    use, naming the line). Raises ValidationFailed naming the line of one that is not a JSON object."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationFailed(reasons.dataset_not_utf8(exc.start),
                               details={"line": 1, "field": "(file)"}) from None
    rows = []
    for number, row, fault in _lines(text):
        if fault is not None:
            field_, problem = fault
            raise ValidationFailed(reasons.dataset_line_refused(number, None if field_ == "(line)" else field_, problem),
                                   details={"line": number, "field": field_})
        chat, faults = as_chat(row)
        if faults:
            field_, problem = faults[0]
            raise ValidationFailed(reasons.dataset_line_refused(number, field_, problem),
                                   details={"line": number, "field": field_})
        rows.append(Row(number, chat))
    return rows


def validate_jsonl(data: bytes) -> DatasetReport:
    report = DatasetReport()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        report.fault(1, "(file)", f"is not UTF-8 text (byte {exc.start})")
        return report
    for number, row, fault in _lines(text):
        if fault is not None:
            report.fault(number, *fault)
            continue
        converted_from = source_format(row)
        row, faults = as_chat(row)
        if faults:
            for field_, problem in faults:
                report.fault(number, field_, problem)
            continue
        fmt = row_format(row)
        if fmt is None:
            report.fault(number, "(row)", reasons.dataset_row_format_unknown(sorted(row)))
            continue
        if report.format is None:
            report.format = fmt
        elif fmt != report.format:
            report.fault(number, "(row)", f"is a {fmt} row, and this dataset's rows are {report.format} rows")
            continue
        faults: list[tuple[str, str]] = []
        if fmt == CHAT:
            faults = _messages_faults(row["messages"], "messages")
            if not faults and row["messages"][-1].get("role") != "assistant":
                faults.append(("messages", "must end with an assistant message to train on"))
        else:
            prompt = row["prompt"]
            if isinstance(prompt, list):
                faults = _messages_faults(prompt, "prompt")
            elif not isinstance(prompt, str) or not prompt:
                faults.append(("prompt", "must be a non-empty string or a list of messages"))
            if fmt == COMPLETION and not isinstance(row["completion"], str):
                faults.append(("completion", "must be a string"))
        for field_, problem in faults:
            report.fault(number, field_, problem)
        if not faults:
            report.rows += 1
            report.converted_from = report.converted_from or converted_from
            if row_modality(row) == IMAGE_TEXT:
                report.modality = IMAGE_TEXT
    if report.rows == 0 and report.fault_count == 0:
        report.fault(1, "(file)", "holds no rows")
    return report
