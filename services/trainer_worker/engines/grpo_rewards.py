"""A GRPO run's rewards as TRL reward functions (SPEC 4), one per entry of `grpo.rewards`.

TRL calls each with the batch's prompts and completions plus every dataset column as a list, and
weighs their outputs with `reward_weights`; it logs `rewards/NAME/mean|std` under each function's
`__name__`, which is set to `shared.rewards.functions.reward_key` so metrics and plan entries match.

Function rewards are scored by one `shared.rewards.process.RewardScorer` per run: the built-in ones
here, a deployment's registered ones in a process of their own under a time budget per call; an
overrun (or a function that raises) fails the step with a sentence naming the step and the reward.

A judge is asked through its serving process's chat API (`shared.rewards.functions.ask_judge`) at the address
its endpoint has while READY, read fresh for every batch. An answer with no number scores 0 for that
completion, and the step's count of such answers becomes a warn event. A judge that cannot be
reached is waited for (it may be restarting) up to `JUDGE_WAIT_S`, then the run fails saying so.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import requests

from shared import reasons
from shared.errors import WorkFailed
from shared.rewards.functions import ask_judge, judge_messages, parse_judge_score, reward_key
from shared.rewards.process import RewardScorer

JUDGE_WAIT_S = 120.0
JUDGE_RETRY_S = 1.0
# What TRL passes beside the dataset's columns.
_NOT_COLUMNS = {"trainer_state", "log_extra", "log_metric", "environments", "completion_ids", "prompts", "completions"}


@dataclass
class RewardClock:
    """Seconds spent scoring in the current step (reset by the engine at each step start)."""

    seconds: float = 0.0


def completion_text(completion: Any) -> str:
    """A TRL completion as text: a string, or a conversation whose last message is the answer."""
    if isinstance(completion, list):
        return str((completion[-1] or {}).get("content") or "") if completion else ""
    return str(completion)


def _rows(kwargs: Mapping[str, Any], count: int) -> list[dict[str, Any]]:
    columns = {k: v for k, v in kwargs.items() if k not in _NOT_COLUMNS and isinstance(v, list) and len(v) == count}
    return [{k: v[i] for k, v in columns.items()} for i in range(count)]


def _step(kwargs: Mapping[str, Any]) -> int:
    state = kwargs.get("trainer_state")
    return int(getattr(state, "global_step", 0)) + 1


def trl_reward_functions(rewards: list[Mapping[str, Any]], *, registered: Mapping[str, str],
                         judge_address: Callable[[str], Any] | None, reporter, clock: RewardClock,
                         judge_wait_s: float = JUDGE_WAIT_S,
                         scorer: RewardScorer | None = None) -> list[Callable[..., list[float | None]]]:
    """`scorer`: what scores the function rewards (the caller closes it when training ends); one is
    made when none is given (its process, if any, ends with it)."""
    scorer = scorer or RewardScorer(rewards, registered)
    functions = []
    for i, entry in enumerate(rewards):
        key = reward_key(rewards, i)
        if entry.get("function"):
            function = _function_reward(scorer, i, clock)
        else:
            function = _judge_reward(str(entry["judge"]), judge_address, reporter, clock, judge_wait_s)
        function.__name__ = key
        functions.append(function)
    return functions


def _function_reward(scorer: RewardScorer, index: int, clock: RewardClock):
    def reward(prompts, completions, **kwargs) -> list[float | None]:
        started = time.perf_counter()
        rows = _rows(kwargs, len(completions))
        scores = scorer.score(index, [completion_text(c) for c in completions], rows, where=f"step {_step(kwargs)}")
        clock.seconds += time.perf_counter() - started
        return scores

    return reward


def _judge_reward(judge: str, judge_address, reporter, clock: RewardClock, wait_s: float):
    session = requests.Session()

    def ask(messages) -> str:
        deadline = time.monotonic() + wait_s
        problem = reasons.JUDGE_NOT_READY
        while True:
            target = judge_address(judge) if judge_address else None  # shared.rewards.judges.JudgeTarget
            if target:
                try:
                    return ask_judge(target.address, messages, model=target.model, session=session,
                                     api_key=getattr(target, "api_key", None))
                except requests.Timeout:
                    problem = reasons.JUDGE_TIMED_OUT
                except requests.HTTPError as exc:
                    problem = reasons.judge_answered_error(getattr(exc.response, "status_code", None))
                except requests.RequestException:  # a refused or dropped connection, a broken answer
                    problem = reasons.JUDGE_CONNECTION_FAILED
            if time.monotonic() >= deadline:
                raise WorkFailed(reasons.grpo_judge_unreachable(judge, wait_s, problem))
            time.sleep(JUDGE_RETRY_S)

    def reward(prompts, completions, **kwargs) -> list[float]:
        started = time.perf_counter()
        rows = _rows(kwargs, len(completions))
        scores, unparsable = [], 0
        for prompt, completion, row in zip(prompts, completions, rows):
            score = parse_judge_score(ask(judge_messages(prompt, completion_text(completion), row)))
            if score is None:
                unparsable += 1
                score = 0.0
            scores.append(score)
        if unparsable:
            reporter.event(reasons.grpo_judge_unparsable(judge, unparsable, _step(kwargs)), level="warn")
        clock.seconds += time.perf_counter() - started
        return scores

    return reward
