"""Rewards and judges (shared/rewards/functions.py, shared/rewards/process.py; GRPO, SPEC 4): a reward entry's
parameters, patterns RE2 refuses, registered functions past their time budget, judges that do not
answer. `where` is the reward entry (grpo.rewards.0) at submission, or the step / row being scored
("step 3", "row 7")."""

from __future__ import annotations

import json


def judge_unknown(judge: str) -> str:
    """A grpo reward's judge or an evaluation's `judge` (an id, or a live endpoint's name) that names
    no endpoint the caller may use (shared/rewards/judges.py)."""
    return f"judge {judge} is not an endpoint of this deployment; `training endpoints get` lists them"


def judge_ended(judge: str, phase: str) -> str:
    """A judge named at submission whose endpoint has ended (shared/rewards/judges.py)."""
    return f"judge endpoint {judge} is {phase}; start another endpoint to judge with"


def grpo_judge_unparsable(judge: str, count: int, step: int) -> str:
    """Warn event of a GRPO step in which a judge answered some completions with no number."""
    return f"judge endpoint {judge} answered {count} completion(s) of step {step} with no score in 0..10; they score 0"


def grpo_judge_unreachable(judge: str, waited_s: float, problem: str) -> str:
    """A GRPO run's judge did not answer for a while: the run fails with this (inside run_failed);
    `problem` is one of the JUDGE_* phrases below, or judge_answered_error."""
    return f"judge endpoint {judge} did not answer for {waited_s:g}s ({problem}); the run cannot score its completions"


# What a judge's last try met (services/trainer_worker/engines/grpo_rewards.py).
JUDGE_NOT_READY = "it is not READY"
JUDGE_TIMED_OUT = "its serving process took longer than a judge's answer may"
JUDGE_CONNECTION_FAILED = "its serving process refused or dropped the connection"


def judge_answered_error(status: int | None) -> str:
    return f"its serving process answered HTTP {status}" if status else "its serving process answered with an error"


def reward_parameter_unknown(where: str, function: str, parameter: str, takes: list[str]) -> str:
    """A reward entry gives its function a parameter the function does not take (a built-in one's
    list, or a registered one's signature); `where` is the entry, e.g. grpo.rewards.0."""
    if not takes:
        return (f"{where}.{parameter}: reward function {function} takes no parameter {parameter}; "
                "it takes none beside the completion and the row")
    return (f"{where}.{parameter}: reward function {function} takes no parameter {parameter}; "
            f"it takes {', '.join(takes)}")


def reward_parameter_missing(where: str, function: str, parameter: str) -> str:
    """A registered reward function's signature has a parameter with no default that the entry omits."""
    return f"{where}.{parameter}: reward function {function} needs the parameter {parameter} (it has no default)"


def reward_parameter_type(where: str, function: str, parameter: str, must: str, value: object) -> str:
    """A built-in reward function's parameter of the wrong type (`must` says what it must be)."""
    shown = json.dumps(value, default=str)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"{where}.{parameter}: reward function {function} takes {parameter} as {must}, not {shown}"


def reward_judge_parameter(where: str, parameter: str) -> str:
    """A judge reward entry carries a key beside judge and weight."""
    return (f"{where}.{parameter}: a judge reward has only judge and weight; its endpoint's answer is "
            "the score, asked with no parameters")


def reward_parameter_not_json(value: object) -> str:
    """A reward parameter that is not a JSON value (the plan stores it); the schema prefixes the field."""
    got = repr(value) if isinstance(value, float) else f"a value of type {type(value).__name__}"  # nan, inf too
    return (f"must be a JSON value (a string, number, true, false, null, list or object), not {got}; "
            "reward parameters are stored in the plan")


def reward_pattern_refused(where: str, problem: str) -> str:
    """A regex reward's pattern that RE2 does not compile (a backreference, a lookaround, a
    possessive quantifier, a repetition past 1000, or plain bad syntax)."""
    return (f"{where}.pattern: RE2, which matches reward patterns, refuses it: {problem}; it has no "
            "backreferences, lookahead or lookbehind, so that no pattern can take more than linear time "
            "on a completion")


def reward_call_overran(where: str, key: str, reference: str, budget_s: float) -> str:
    """A registered reward function gave no score for one completion within its budget."""
    return (f"{where}: reward {key} ({reference}) did not score a completion within {budget_s:g}s, so it was "
            "stopped (the budget of one reward call is TRAINING_REWARD_CALL_BUDGET_S on the worker)")


def reward_call_raised(where: str, key: str, error: str) -> str:
    """A registered reward function raised on a completion."""
    return f"{where}: reward {key} failed on a completion: {error}"


# What reward_call_raised says of a reward process whose answer was not one its protocol has.
REWARD_PROCESS_OUT_OF_PROTOCOL = "its process answered out of protocol"


def reward_process_ended(where: str, key: str, how: str) -> str:
    """The process that runs registered reward functions ended while scoring (`how`: how_it_ended)."""
    return f"{where}: the process scoring reward {key} {how} before it gave a score"


# --- Reward entries refused (shared/rewards/functions.py check_rewards, load_registered).

def reward_unloadable(reference: str, error: str) -> str:
    return f"reward function {reference} cannot be loaded: {error}"


def reward_not_callable(reference: str) -> str:
    return f"reward function {reference} is not callable"


def reward_function_or_judge(where: str, *, both: bool) -> str:
    return f"{where}: a reward names either a function or a judge endpoint, not {'both' if both else 'neither'}"


def reward_function_unknown_here(where: str, function: str, known: list[str]) -> str:
    return f"{where}.function: no reward function {function} in this deployment; it has {', '.join(known)}"


def reward_function_missing(function: str) -> str:
    """A reward a worker's deployment does not register (its config differs from the API's)."""
    return f"no reward function {function} in this deployment"


def regex_reward_without_pattern(where: str) -> str:
    return f"{where}.pattern: the regex reward needs a pattern"


def length_reward_without_target(where: str) -> str:
    return f"{where}.target: the length reward needs a target length of 1 or more characters"


# What a built-in reward's parameter must be (reward_parameter_type's `must`).
REWARD_FIELD_TYPE = "the name of a dataset field (a string)"
REWARD_PATTERN_TYPE = "a regular expression (a string)"
