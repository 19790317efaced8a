"""Dataset validation on upload (SPEC 2.2).

Accepted rows: chat `messages`; `prompt` + `completion`; for reinforcement, `prompt` (text or
messages) plus any fields reward functions read. Every fault names its line and field; the first
20 are reported. A dataset has one format: the format of its first valid row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

MAX_FAULTS = 20
ROLES = ("system", "user", "assistant", "tool")


@dataclass
class DatasetReport:
    rows: int = 0
    format: str | None = None  # chat | completion | prompt
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
        if not isinstance(msg.get("content"), str):
            faults.append((f"{where}.content", "must be a string"))
    return faults


def row_format(row: dict[str, Any]) -> str | None:
    if "messages" in row:
        return "chat"
    if "prompt" in row and "completion" in row:
        return "completion"
    if "prompt" in row:
        return "prompt"
    return None


def validate_jsonl(data: bytes) -> DatasetReport:
    report = DatasetReport()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        report.fault(1, "(file)", f"is not UTF-8 text (byte {exc.start})")
        return report
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            report.fault(number, "(line)", f"is not valid JSON: {exc.msg} at column {exc.colno}")
            continue
        if not isinstance(row, dict):
            report.fault(number, "(line)", "must be a JSON object")
            continue
        fmt = row_format(row)
        if fmt is None:
            report.fault(number, "(row)", "needs messages, or prompt and completion, or prompt")
            continue
        if report.format is None:
            report.format = fmt
        elif fmt != report.format:
            report.fault(number, "(row)", f"is a {fmt} row, and this dataset's rows are {report.format} rows")
            continue
        faults: list[tuple[str, str]] = []
        if fmt == "chat":
            faults = _messages_faults(row["messages"], "messages")
            if not faults and row["messages"][-1].get("role") != "assistant":
                faults.append(("messages", "must end with an assistant message to train on"))
        else:
            prompt = row["prompt"]
            if isinstance(prompt, list):
                faults = _messages_faults(prompt, "prompt")
            elif not isinstance(prompt, str) or not prompt:
                faults.append(("prompt", "must be a non-empty string or a list of messages"))
            if fmt == "completion" and not isinstance(row["completion"], str):
                faults.append(("completion", "must be a string"))
        for field_, problem in faults:
            report.fault(number, field_, problem)
        if not faults:
            report.rows += 1
    if report.rows == 0 and report.fault_count == 0:
        report.fault(1, "(file)", "holds no rows")
    return report
