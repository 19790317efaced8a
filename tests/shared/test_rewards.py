"""The reward functions and the judge score parser (shared/rewards.py)."""

from __future__ import annotations

import pytest

from shared import rewards
from shared.errors import ValidationFailed


def test_exact_match_compares_collapsed_whitespace_and_skips_rows_without_the_field():
    assert rewards.exact_match("  4 ", {"answer": "4"}) == 1.0
    assert rewards.exact_match("the  answer\nis 4", {"answer": "the answer is 4"}) == 1.0
    assert rewards.exact_match("5", {"answer": "4"}) == 0.0
    assert rewards.exact_match("4", {"label": "4"}, field="label") == 1.0
    assert rewards.exact_match("4", {"prompt": "2+2"}) is None


def test_regex_is_a_whole_completion_format_check():
    assert rewards.regex(" 42\n", {}, pattern=r"\d+") == 1.0
    assert rewards.regex("the answer is 42", {}, pattern=r"\d+") == 0.0
    assert rewards.regex("<a>x\ny</a>", {}, pattern=r"<a>.*</a>") == 1.0


def test_length_is_zero_at_the_target_and_minus_one_at_nothing_or_twice_it():
    assert rewards.length("abcd", {}, target=4) == 0.0
    assert rewards.length("", {}, target=4) == -1.0
    assert rewards.length("abcdefgh", {}, target=4) == -1.0
    assert rewards.length("ab", {}, target=4) == -0.5


def test_scores_weights_and_keys():
    entries = [{"function": "exact_match", "weight": 2.0}, {"function": "length", "target": 2, "weight": 1.0},
               {"judge": "ep-1", "weight": 1.0}]
    scores = rewards.score_functions(entries, "4", {"answer": "4"})
    assert scores == {"exact_match": 1.0, "length": -0.5}
    assert rewards.weighted_total(entries, {**scores, "judge:ep-1": 0.5}) == pytest.approx(2.0 - 0.5 + 0.5)
    twice = [{"function": "regex", "pattern": "a"}, {"function": "regex", "pattern": "b"}]
    assert [rewards.reward_key(twice, i) for i in range(2)] == ["regex#1", "regex#2"]
    assert rewards.score_functions(twice, "b", {}) == {"regex#1": 0.0, "regex#2": 1.0}


def registered_reward(completion, row, *, bonus=0.0):
    return len(row.get("answer", "")) + bonus


def test_registered_functions_are_loaded_by_reference_with_their_parameters():
    registered = {"answer_length": f"{__name__}:registered_reward"}
    entries = [{"function": "answer_length", "weight": 1.0, "bonus": 0.5}]
    rewards.check_rewards(entries, registered=registered)
    assert rewards.score_functions(entries, "x", {"answer": "abc"}, registered=registered) == {"answer_length": 3.5}
    with pytest.raises(ValidationFailed, match="cannot be loaded"):
        rewards.load_registered("no_such_module_here:f")


@pytest.mark.parametrize("entry, message", [
    ({"function": "nope"}, "grpo.rewards.0.function: no reward function nope in this deployment; it has "
                           "exact_match, length, regex"),
    ({"function": "regex"}, "grpo.rewards.0.pattern: the regex reward needs a pattern"),
    ({"function": "regex", "pattern": "("}, "grpo.rewards.0.pattern: not a regular expression"),
    ({"function": "length", "target": 0}, "grpo.rewards.0.target: the length reward needs a target length"),
    ({"function": "exact_match", "judge": "ep-1"}, "grpo.rewards.0: a reward names either a function or a judge "
                                                   "endpoint, not both"),
    ({"weight": 1.0}, "grpo.rewards.0: a reward names either a function or a judge endpoint, not neither"),
])
def test_rewards_that_cannot_be_scored_are_refused_naming_the_field(entry, message):
    with pytest.raises(ValidationFailed) as caught:
        rewards.check_rewards([entry])
    assert str(caught.value.message).startswith(message)


@pytest.mark.parametrize("text, score", [
    ("8", 0.8), ("Score: 7/10", 0.7), ("3 / 5", 0.6), ("10", 1.0), ("12", 1.0), ("-3", 0.0),
    ("I give it 9.5.", 0.95), ("no idea", None), ("", None), (None, None),
])
def test_judge_answers_parse_to_a_score_in_zero_one(text, score):
    parsed = rewards.parse_judge_score(text)
    assert parsed == (pytest.approx(score) if score is not None else None)


def test_judge_messages_carry_question_reference_and_answer():
    messages = rewards.judge_messages([{"role": "user", "content": "2+2?"}], "4", {"answer": "4"})
    assert messages[0]["role"] == "system" and "number from 0 to 10" in messages[0]["content"]
    assert messages[1]["content"] == "Question:\nuser: 2+2?\n\nReference answer:\n4\n\nAnswer:\n4"
