"""`training runs samples`: a grpo run's rollout samples as text that fits the terminal (80 columns
and up, never wrapped): per step a heading, per prompt group its prompt on one line, then one line
per completion with its weighted reward, advantage, each reward's score and the completion, each
text on one shortened line (-o json has them as stored)."""

from __future__ import annotations

import shutil
from typing import Any

from shared import reasons

MIN_WIDTH, MAX_WIDTH = 60, 200
SCORE_WIDTH = 11  # a reward's column: its key cut to 10 characters, and a space
NEWLINE = "⏎"  # where a text had a line break


def width() -> int:
    """The terminal's width ($COLUMNS where set; 80 when unknown), within MIN_WIDTH..MAX_WIDTH."""
    return min(max(shutil.get_terminal_size((80, 24)).columns, MIN_WIDTH), MAX_WIDTH)


def one_line(text: Any, room: int) -> str:
    line = " ".join(str(text or "").replace("\n", f" {NEWLINE} ").split())
    return line if len(line) <= room else line[:max(room - 1, 0)] + "…"


def number(value: Any, *, signed: bool = False) -> str:
    if value is None:
        return "-"
    value = float(value)
    shown = f"{value:+.3f}" if signed else f"{value:.3f}"
    return shown if len(shown) <= 7 else f"{value:.2g}"


def render(samples: list[dict[str, Any]], columns: int | None = None) -> str:
    """The lines of `samples` (the API's step samples), none longer than `columns`."""
    columns = columns or width()
    lines: list[str] = []
    for sample in samples:
        groups = sample.get("groups") or []
        if lines:
            lines.append("")
        lines.append(one_line(reasons.samples_step_heading(int(sample["step"]), len(groups),
                                                           int(sample.get("groupsInStep") or 0),
                                                           int(sample.get("completionsInStep") or 0)), columns))
        keys = list(dict.fromkeys(k for g in groups for c in g.get("completions") or [] for k in c.get("scores") or {}))
        fixed = 4 + 8 + 8  # "  #N" index, REWARD, ADVANTAGE
        inline = fixed + SCORE_WIDTH * len(keys) <= columns - 20  # the scores fit beside the text
        shown = keys if inline else []
        for number_, group in enumerate(groups, 1):
            lines.append(one_line(f"prompt {number_}: {group.get('prompt')}", columns))
            header = f"{'#':>3} {'REWARD':>7} {'ADVANT.':>7} " + "".join(f"{k[:10]:>10} " for k in shown) + "COMPLETION"
            lines.append(header[:columns])
            for i, completion in enumerate(group.get("completions") or [], 1):
                scores = completion.get("scores") or {}
                head = (f"{i:>3} {number(completion.get('reward')):>7} {number(completion.get('advantage'), signed=True):>7} "
                        + "".join(f"{number(scores.get(k)):>10} " for k in shown))
                lines.append(head + one_line(completion.get("text"), columns - len(head)))
                if not inline and keys:
                    lines.append("    " + one_line(" ".join(f"{k}={number(scores.get(k))}" for k in keys), columns - 4))
    return "\n".join(lines)
