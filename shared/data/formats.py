"""Alpaca and ShareGPT rows, read as chat rows (issue 30): the two dataset formats most files on the
hub and most peers' docs use, beside the trainer's own (shared/data/datasets.py).

- **Alpaca** (`instruction`, optional `input`, `output`, optional `system` and `history`, as
  LLaMA-Factory reads it): one user turn, the instruction followed by the input on a new line, and
  the output as the assistant's answer; `system` first and `history` ([instruction, answer] pairs)
  before them.
- **ShareGPT** (`conversations`: a list of `{from, value}`, optional `system`): each turn a message,
  `from` read as a role (human/user, gpt/assistant, system, tool/observation); `role`/`content`
  turns are read too.

`as_chat(row)` gives the chat row (`messages`, and every other field of the row kept, for reward
functions) or the faults, each naming the field as the file spells it. A row that has `messages`
or `prompt` is the trainer's own format and is left alone. The file is stored as uploaded; every
reader converts it again, the same way.
"""

from __future__ import annotations

from typing import Any

from shared import reasons

ALPACA, SHAREGPT = "alpaca", "sharegpt"
ALPACA_FIELDS = ("instruction", "input", "output", "system", "history")
SHAREGPT_FIELDS = ("conversations", "system")
# ShareGPT's speakers and the chat role each is read as.
SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant",
                  "system": "system", "tool": "tool", "observation": "tool"}

Faults = list[tuple[str, str]]


def source_format(row: dict[str, Any]) -> str | None:
    """ALPACA or SHAREGPT for a row in one of them, None for the trainer's own formats (or none)."""
    if "messages" in row or "prompt" in row:
        return None
    if "conversations" in row:
        return SHAREGPT
    if "instruction" in row and "output" in row:
        return ALPACA
    return None


def as_chat(row: dict[str, Any]) -> tuple[dict[str, Any], Faults]:
    """(the row as a chat row, []) or (the row as it is, its faults); a row in the trainer's own
    formats comes back as it is."""
    fmt = source_format(row)
    if fmt is None:
        return row, []
    messages, faults = (_alpaca if fmt == ALPACA else _sharegpt)(row)
    if faults:
        return row, faults
    kept = {key: value for key, value in row.items()
            if key not in (ALPACA_FIELDS if fmt == ALPACA else SHAREGPT_FIELDS)}
    return {"messages": messages, **kept}, []


def _system(row: dict[str, Any], faults: Faults) -> list[dict[str, Any]]:
    system = row.get("system")
    if system is None or system == "":
        return []
    if not isinstance(system, str):
        faults.append(("system", reasons.ALPACA_TEXT_REFUSED))
        return []
    return [{"role": "system", "content": system}]


def _alpaca(row: dict[str, Any]) -> tuple[list[dict[str, Any]], Faults]:
    faults: Faults = []
    instruction, given, output = row.get("instruction"), row.get("input"), row.get("output")
    if not isinstance(instruction, str) or not instruction:
        faults.append(("instruction", reasons.ALPACA_INSTRUCTION_REFUSED))
    if given is not None and not isinstance(given, str):
        faults.append(("input", reasons.ALPACA_TEXT_REFUSED))
    if not isinstance(output, str):
        faults.append(("output", reasons.ALPACA_TEXT_REFUSED))
    messages = _system(row, faults)
    history = row.get("history")
    if history is not None:
        if not isinstance(history, list) or not all(
                isinstance(pair, list) and len(pair) == 2 and all(isinstance(t, str) for t in pair) for pair in history):
            faults.append(("history", reasons.ALPACA_HISTORY_REFUSED))
        else:
            for asked, answered in history:
                messages += [{"role": "user", "content": asked}, {"role": "assistant", "content": answered}]
    if faults:
        return [], faults
    question = instruction + (f"\n{given}" if given else "")
    return messages + [{"role": "user", "content": question}, {"role": "assistant", "content": output}], []


def _sharegpt(row: dict[str, Any]) -> tuple[list[dict[str, Any]], Faults]:
    faults: Faults = []
    turns = row.get("conversations")
    if not isinstance(turns, list) or not turns:
        return [], [("conversations", reasons.SHAREGPT_CONVERSATIONS_REFUSED)]
    messages = _system(row, faults)
    for i, turn in enumerate(turns):
        where = f"conversations[{i}]"
        if not isinstance(turn, dict):
            faults.append((where, reasons.SHAREGPT_TURN_REFUSED))
            continue
        speaker_key, value_key = ("from", "value") if "from" in turn or "value" in turn else ("role", "content")
        speaker, value = turn.get(speaker_key), turn.get(value_key)
        if speaker not in SHAREGPT_ROLES:
            faults.append((f"{where}.{speaker_key}", reasons.sharegpt_role_refused(list(SHAREGPT_ROLES))))
        if not isinstance(value, str):
            faults.append((f"{where}.{value_key}", reasons.SHAREGPT_VALUE_REFUSED))
        if speaker in SHAREGPT_ROLES and isinstance(value, str):
            messages.append({"role": SHAREGPT_ROLES[speaker], "content": value})
    if not faults and messages[-1]["role"] != "assistant":
        faults.append(("conversations", reasons.SHAREGPT_LAST_TURN_REFUSED))
    return messages, faults
