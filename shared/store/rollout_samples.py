"""A GRPO run's rollout samples (issue 30): a bounded sample of each step's rollouts, so a run whose
reward stays 0 can be read: the prompts as the policy saw them, its completions, each reward's
score, the weighted total and the advantage the update used.

Plain Python (no torch): the engine builds a step's sample with `step_sample` from what TRL logged
for the step; the worker stores it beside the run's metrics (shared/store/documents.py), keeping the last
SAMPLE_STEPS steps; the API, the CLI and the dashboard read it.

Bounds: per step the first SAMPLE_GROUPS prompt groups, SAMPLE_COMPLETIONS completions of each,
every text cut to SAMPLE_TEXT_CHARS characters (marked as cut). At most about 40 KB of JSON a
step (measured with every text at its bound and two rewards), so about 8 MB a run in Redis at the
worst; a typical run far less (short prompts, a few completions).
"""

from __future__ import annotations

import math
from typing import Any

SAMPLE_GROUPS = 4  # prompt groups kept per step (the first ones of the step)
SAMPLE_COMPLETIONS = 8  # completions kept per group (the first ones)
SAMPLE_TEXT_CHARS = 1000  # each prompt and completion cut to this many characters
SAMPLE_STEPS = 200  # steps kept per run: older samples are dropped (LTRIM)
SAMPLE_PAGE_DEFAULT = 10  # steps per page of GET /v1/runs/RUN/samples
SAMPLE_PAGE_MAX = 50


def as_text(value: Any) -> str:
    """A prompt or completion as TRL logged it, as text: a string as it is; a conversation as one
    `role: content` line per message (an image part as [image])."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        lines = []
        for message in value:
            if not isinstance(message, dict):
                lines.append(str(message))
                continue
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(part.get("text", "") if part.get("type") == "text" else f"[{part.get('type')}]"
                                   for part in content if isinstance(part, dict))
            lines.append(f"{message.get('role', '?')}: {content if content is not None else ''}")
        return "\n".join(lines)
    return "" if value is None else str(value)


def _cut(value: Any) -> tuple[str, bool]:
    text = as_text(value)
    return (text[:SAMPLE_TEXT_CHARS], True) if len(text) > SAMPLE_TEXT_CHARS else (text, False)


def _number(value: Any) -> float | None:
    """A score or advantage as JSON can hold it: None for a missing or NaN one (a reward that
    returned None for this completion)."""
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) or math.isinf(value) else value


def step_sample(*, step: int, prompts: list, completions: list, scores: dict[str, list], weights: dict[str, float],
                advantages: list, group_size: int) -> dict[str, Any]:
    """The sample of one step from its rollouts, in TRL's order (each prompt repeated once per
    completion, consecutively, `group_size` = numGenerations times; two groups may have the same
    prompt): `scores` is each reward key's score per completion, `weights` its weight in the plan. The weighted total is computed as TRL computes it (scores that are None
    count 0; a completion no reward scored has none)."""
    count = len(completions)
    groups: list[dict[str, Any]] = []
    group_size = max(int(group_size), 1)
    group_count = 0
    for i in range(count):
        if i % group_size == 0:
            group_count += 1
            if group_count <= SAMPLE_GROUPS:
                text, cut = _cut(prompts[i] if i < len(prompts) else None)
                groups.append({"prompt": text, "promptTruncated": cut, "completions": []})
        if group_count > SAMPLE_GROUPS or len(groups[-1]["completions"]) >= SAMPLE_COMPLETIONS:
            continue
        one = {key: _number(values[i]) if i < len(values) else None for key, values in scores.items()}
        scored = [weights.get(key, 1.0) * v for key, v in one.items() if v is not None]
        text, cut = _cut(completions[i])
        groups[-1]["completions"].append({
            "text": text, "truncated": cut, "scores": one,
            "reward": sum(scored) if scored else None,
            "advantage": _number(advantages[i]) if i < len(advantages) else None,
        })
    return {"step": int(step), "groups": groups, "groupsInStep": group_count, "completionsInStep": count}


def latest_per_step(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stored samples, one per step (a step trained again after a resume: its latest), newest
    step first."""
    by_step: dict[int, dict[str, Any]] = {}
    for sample in samples:
        by_step[int(sample.get("step") or 0)] = sample
    return [by_step[step] for step in sorted(by_step, reverse=True)]
