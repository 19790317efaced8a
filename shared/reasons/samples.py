"""Sentences about a GRPO run's rollout samples (shared/store/rollout_samples.py) and an evaluation's rows
as the API, the CLI and the dashboard show them."""

from __future__ import annotations

# A GRPO run whose TRL logs its rollouts in a shape the engine does not read (engines/grpo.py)
ROLLOUT_SAMPLES_UNREADABLE = ("this run keeps no rollout samples: the installed TRL does not log a step's rollouts as "
                              "the GRPO engine reads them; training goes on")


def query_whole_number_invalid(param: str, low: int, high: int, raw: str) -> str:
    """A query parameter that takes a bounded whole number (?step=, ?limit= of samples)."""
    return f"{param} must be a whole number from {low} to {high}, not {raw!r}"


def run_has_no_samples_at(run_id: str, step: int, kept: list[int], keep: int) -> str:
    """?step=N of a run's samples where none is kept for that step."""
    if not kept:
        return f"run {run_id} has no rollout samples: only a grpo run keeps them, from its first step on"
    return (f"run {run_id} has no rollout sample of step {step}: it keeps the last {keep} steps, "
            f"now steps {min(kept)} to {max(kept)}")


def samples_none_yet(run_id: str) -> str:
    """`training runs samples RUN` of a run that has none (yet)."""
    return f"run {run_id} has no rollout samples yet (only a grpo run keeps them, one per step)"


def samples_step_heading(step: int, groups_kept: int, groups: int, completions: int) -> str:
    """The line above a step's samples in the CLI."""
    return f"step {step}: {groups_kept} of {groups} prompt group(s), {completions} completion(s) in the step"
