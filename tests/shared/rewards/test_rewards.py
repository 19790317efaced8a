"""The reward functions and the judge score parser (shared/rewards/functions.py)."""

from __future__ import annotations

import sys

import pytest

from shared import reasons
from shared.errors import ValidationFailed
from shared.plans import parse_plan
from shared.rewards import functions as rewards
from shared.rewards.process import RewardScorer


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


HOSTILE_PATTERN = "(.*.*)*Z"  # issue 26: Python's re backtracks exponentially on it, holding the GIL


@pytest.mark.timeout(60)  # Python's re takes ages on 40 characters; RE2 is linear in the completion
def test_a_catastrophic_pattern_is_matched_in_linear_time():
    rewards.check_rewards([{"function": "regex", "pattern": HOSTILE_PATTERN}])
    assert rewards.regex("a" * 40, {}, pattern=HOSTILE_PATTERN) == 0.0
    assert rewards.regex("a" * 100_000, {}, pattern=HOSTILE_PATTERN) == 0.0
    assert rewards.regex("ab\ncZ", {}, pattern=HOSTILE_PATTERN) == 1.0


@pytest.mark.parametrize("pattern, problem", [
    (r"(a)\1", r"invalid escape sequence: \1"),  # a backreference
    ("(?=a)a", "invalid perl operator: (?="),  # lookahead
    ("(?<!a)b", "invalid perl operator: (?<!"),  # lookbehind
    ("a++", "bad repetition operator: ++"),  # possessive
    ("(", "missing ): ("),
])
def test_a_pattern_re2_refuses_is_refused_at_submission_naming_the_field_and_the_construct(pattern, problem):
    with pytest.raises(ValidationFailed) as caught:
        rewards.check_rewards([{"function": "exact_match"}, {"function": "regex", "pattern": pattern}])
    assert caught.value.message == reasons.reward_pattern_refused("grpo.rewards.1", problem)
    assert caught.value.message == (f"grpo.rewards.1.pattern: RE2, which matches reward patterns, refuses it: "
                                    f"{problem}; it has no backreferences, lookahead or lookbehind, so that no "
                                    "pattern can take more than linear time on a completion")
    assert caught.value.details == {"field": "grpo.rewards.1.pattern"}


def test_a_judge_answer_is_parsed_by_re2_too():
    assert rewards.parse_judge_score("7") == pytest.approx(0.7)
    assert rewards.parse_judge_score("score: 3 / 4") == pytest.approx(0.75)
    assert rewards.parse_judge_score("x" * 100_000) is None


def test_length_is_zero_at_the_target_and_minus_one_at_nothing_or_twice_it():
    assert rewards.length("abcd", {}, target=4) == 0.0
    assert rewards.length("", {}, target=4) == -1.0
    assert rewards.length("abcdefgh", {}, target=4) == -1.0
    assert rewards.length("ab", {}, target=4) == -0.5


def test_scores_weights_and_keys():
    entries = [{"function": "exact_match", "weight": 2.0}, {"function": "length", "target": 2, "weight": 1.0},
               {"judge": "ep-1", "weight": 1.0}]
    scores = RewardScorer(entries).score_one("4", {"answer": "4"}, where="row 0")
    assert scores == {"exact_match": 1.0, "length": -0.5}
    assert rewards.weighted_total(entries, {**scores, "judge:ep-1": 0.5}) == pytest.approx(2.0 - 0.5 + 0.5)
    twice = [{"function": "regex", "pattern": "a"}, {"function": "regex", "pattern": "b"}]
    assert [rewards.reward_key(twice, i) for i in range(2)] == ["regex#1", "regex#2"]
    assert RewardScorer(twice).score_one("b", {}, where="row 0") == {"regex#1": 0.0, "regex#2": 1.0}


def registered_reward(completion, row, *, bonus=0.0):
    return len(row.get("answer", "")) + bonus


def thresholded_reward(completion, row, threshold, *, scale=1.0):
    """A registered function with a parameter it needs (no default)."""
    return scale if len(completion) >= threshold else 0.0


def open_reward(completion, row, **parameters):
    """A registered function that takes any parameter (**kwargs): what it was given, counted."""
    return float(len(parameters)) + float(parameters.get("scale", 0)) * len(completion)


REGISTERED = {"answer_length": f"{__name__}:registered_reward", "at_least": f"{__name__}:thresholded_reward",
              "anything": f"{__name__}:open_reward", "elsewhere": "no_such_package_here.rewards:score"}


def test_registered_functions_are_loaded_by_reference_with_their_parameters():
    registered = {"answer_length": f"{__name__}:registered_reward"}
    entries = [{"function": "answer_length", "weight": 1.0, "bonus": 0.5}]
    rewards.check_rewards(entries, registered=registered)
    with RewardScorer(entries, registered) as scorer:  # in a process of its own (shared/rewards/process.py)
        assert scorer.score_one("x", {"answer": "abc"}, where="row 0") == {"answer_length": 3.5}
    with pytest.raises(ValidationFailed, match="cannot be loaded"):
        rewards.load_registered("no_such_module_here:f")


@pytest.mark.parametrize("entry, message", [
    ({"function": "nope"}, "grpo.rewards.0.function: no reward function nope in this deployment; it has "
                           "exact_match, length, regex"),
    ({"function": "regex"}, "grpo.rewards.0.pattern: the regex reward needs a pattern"),
    ({"function": "length", "target": 0}, "grpo.rewards.0.target: the length reward needs a target length"),
    ({"function": "exact_match", "judge": "ep-1"}, "grpo.rewards.0: a reward names either a function or a judge "
                                                   "endpoint, not both"),
    ({"weight": 1.0}, "grpo.rewards.0: a reward names either a function or a judge endpoint, not neither"),
])
def test_rewards_that_cannot_be_scored_are_refused_naming_the_field(entry, message):
    with pytest.raises(ValidationFailed) as caught:
        rewards.check_rewards([entry])
    assert str(caught.value.message).startswith(message)


def unreadable_signature(completion, row, **parameters):
    return 0.0


unreadable_signature.__signature__ = "not a Signature"  # inspect.signature raises, as for max() or C callables


@pytest.mark.parametrize("function, signature", [
    (registered_reward, rewards.Signature(("bonus",), (), False)),
    (thresholded_reward, rewards.Signature(("threshold", "scale"), ("threshold",), False)),
    (open_reward, rewards.Signature((), (), True)),
    (lambda completion, row, /, limit=1, *args, scale: 0.0, rewards.Signature(("limit", "scale"), ("scale",), False)),
    (lambda *args, scale=1: 0.0, rewards.Signature(("scale",), (), False)),  # *args takes completion and row
    (rewards.exact_match, rewards.Signature(("field",), (), False)),
    (unreadable_signature, None),  # like some builtins: nothing to check
])
def test_a_registered_functions_parameters_are_read_from_its_signature(function, signature):
    assert rewards.signature_of(function) == signature


@pytest.mark.parametrize("name", ["registered_reward", "thresholded_reward", "open_reward"])
def test_the_api_reads_a_registered_signature_from_source_as_inspect_would(name):
    assert rewards.static_signature(f"{__name__}:{name}") == rewards.signature_of(globals()[name])


def test_reading_a_signature_from_source_runs_none_of_the_module(tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    monkeypatch.setenv("REWARD_SIDE_EFFECT_MARKER", str(marker))
    monkeypatch.delitem(sys.modules, "tests.reward_with_side_effects", raising=False)
    assert rewards.static_signature("tests.reward_with_side_effects:bonus_reward") == rewards.Signature(
        ("bonus",), (), False)
    assert not marker.exists() and "tests.reward_with_side_effects" not in sys.modules


@pytest.mark.parametrize("source, expected", [
    ("def f(completion, row, /, limit=1, *args, scale): pass", rewards.Signature(("limit", "scale"), ("scale",), False)),
    ("def f(*args, scale=1): pass", rewards.Signature(("scale",), (), False)),
    ("async def f(c, r, k, **kw): pass", rewards.Signature(("k",), ("k",), True)),
    ("import functools\n@functools.cache\ndef f(c, r): pass", None),  # a decorator may change what f is
    ("def f(c, r, a): pass\nf = max", None),  # rebound: not the def any more
    ("from elsewhere import f", None),
])
def test_a_signature_read_from_source_follows_the_last_binding(tmp_path, monkeypatch, source, expected):
    (tmp_path / "deployed_rewards.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert rewards.static_signature("deployed_rewards:f") == expected
    assert rewards.static_signature("deployed_rewards:missing") is None
    assert rewards.static_signature("no_such_package_here.rewards:f") is None


@pytest.mark.parametrize("entry, message, field, takes", [
    ({"function": "exact_match", "threshold": 0.5}, "grpo.rewards.0.threshold: reward function exact_match takes "
     "no parameter threshold; it takes field", "grpo.rewards.0.threshold", ["field"]),
    ({"function": "regex", "pattern": "a", "field": "answer"}, "grpo.rewards.0.field: reward function regex takes "
     "no parameter field; it takes pattern", "grpo.rewards.0.field", ["pattern"]),
    ({"function": "answer_length", "bonus": 1, "scale": 2}, "grpo.rewards.0.scale: reward function answer_length "
     "takes no parameter scale; it takes bonus", "grpo.rewards.0.scale", ["bonus"]),
    ({"function": "at_least", "scale": 2}, "grpo.rewards.0.threshold: reward function at_least needs the parameter "
     "threshold (it has no default)", "grpo.rewards.0.threshold", ["threshold", "scale"]),
    ({"function": "at_least", "threshold": None}, "grpo.rewards.0.threshold: reward function at_least needs the "
     "parameter threshold (it has no default)", "grpo.rewards.0.threshold", ["threshold", "scale"]),
])
def test_a_parameter_the_function_does_not_take_is_refused_listing_what_it_takes(entry, message, field, takes):
    with pytest.raises(ValidationFailed) as caught:
        rewards.check_rewards([entry], registered=REGISTERED)
    assert caught.value.message == message
    assert caught.value.details == {"field": field, "takes": takes}


def test_parameters_a_function_takes_pass_and_null_counts_as_not_given():
    rewards.check_rewards([{"function": "exact_match", "field": "label", "pattern": None},  # a plan stored before
                           {"function": "at_least", "threshold": 3, "scale": 0.5},
                           {"function": "anything", "scale": 2, "words": ["a", "b"], "options": {"x": 1}},
                           {"judge": "ep-1", "weight": 0.5, "field": None}], registered=REGISTERED)
    # not importable here (the API may lack the deployment's package): left to the worker, which fails saying why
    rewards.check_rewards([{"function": "elsewhere", "anything": 1}], registered=REGISTERED)
    with pytest.raises(ValidationFailed, match="cannot be loaded"):
        rewards.function_of({"function": "elsewhere"}, REGISTERED)


def test_a_judge_reward_takes_no_parameters():
    with pytest.raises(ValidationFailed) as caught:
        rewards.check_rewards([{"function": "exact_match"}, {"judge": "ep-1", "threshold": 0.5}])
    assert caught.value.message == ("grpo.rewards.1.threshold: a judge reward has only judge and weight; its "
                                    "endpoint's answer is the score, asked with no parameters")
    assert caught.value.details == {"field": "grpo.rewards.1.threshold"}


@pytest.mark.parametrize("entry, message", [
    ({"function": "exact_match", "field": 3}, "grpo.rewards.0.field: reward function exact_match takes field as "
     "the name of a dataset field (a string), not 3"),
    ({"function": "regex", "pattern": ["a"]}, 'grpo.rewards.0.pattern: reward function regex takes pattern as a '
     'regular expression (a string), not ["a"]'),
    ({"function": "length", "target": True}, "grpo.rewards.0.target: the length reward needs a target length of 1 "
     "or more characters"),
])
def test_built_in_parameters_of_the_wrong_type_are_refused(entry, message):
    with pytest.raises(ValidationFailed) as caught:
        rewards.check_rewards([entry])
    assert caught.value.message == message


def grpo_plan(*rewards_):
    return {"method": "grpo", "model": "m", "dataset": "ds", "grpo": {"rewards": list(rewards_)}}


def test_the_plan_keeps_a_rewards_parameters_as_given():
    plan = parse_plan(grpo_plan({"function": "anything", "threshold": 0.5, "words": ["a"], "options": {"k": None}},
                                {"function": "exact_match"}))
    assert plan["grpo"]["rewards"] == [
        {"function": "anything", "judge": None, "weight": 1.0, "threshold": 0.5, "words": ["a"],
         "options": {"k": None}},
        {"function": "exact_match", "judge": None, "weight": 1.0}]


@pytest.mark.parametrize("value, shown", [(float("nan"), "nan"), ({1, 2}, "a value of type set"),
                                          ([1, (2, 3)], "a value of type tuple"), ({"k": float("inf")}, "inf")])
def test_a_parameter_that_is_not_json_is_refused_naming_the_field(value, shown):
    with pytest.raises(ValidationFailed) as caught:
        parse_plan(grpo_plan({"function": "anything", "threshold": value}))
    assert caught.value.message == (
        f"plan field grpo.rewards.0.threshold: must be a JSON value (a string, number, true, false, null, list or "
        f"object), not {shown}; reward parameters are stored in the plan")
    assert caught.value.details == {"fields": {"grpo.rewards.0.threshold": [caught.value.message.split(": ", 1)[1]]}}


def test_reward_parameter_sentences_word_for_word():
    assert reasons.reward_parameter_unknown("grpo.rewards.2", "f", "x", ["a", "b"]) == (
        "grpo.rewards.2.x: reward function f takes no parameter x; it takes a, b")
    assert reasons.reward_parameter_unknown("rewards.0", "f", "x", []) == (
        "rewards.0.x: reward function f takes no parameter x; it takes none beside the completion and the row")
    assert reasons.reward_parameter_missing("grpo.rewards.0", "f", "t") == (
        "grpo.rewards.0.t: reward function f needs the parameter t (it has no default)")
    assert reasons.reward_parameter_type("grpo.rewards.0", "f", "p", "a string", "x" * 80) == (
        f'grpo.rewards.0.p: reward function f takes p as a string, not "{"x" * 56}...')
    assert reasons.reward_judge_parameter("grpo.rewards.1", "t") == (
        "grpo.rewards.1.t: a judge reward has only judge and weight; its endpoint's answer is the score, asked "
        "with no parameters")
    assert reasons.reward_parameter_not_json(object()) == (
        "must be a JSON value (a string, number, true, false, null, list or object), not a value of type object; "
        "reward parameters are stored in the plan")


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
