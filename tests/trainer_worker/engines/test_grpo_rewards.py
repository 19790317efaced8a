"""A grpo run's rewards as TRL calls them: functions over the dataset's columns, and a judge that is
a real built-in serving process (the tiny model answers with whatever text it makes up, so some
answers hold a number and some do not: each is scored as parse_judge_score reads it, 0 when it
holds none, and the step's unparsable count becomes one warn event)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from services.trainer_worker.engines.grpo_rewards import RewardClock, trl_reward_functions
from shared import reasons
from shared.errors import WorkFailed
from shared.models.load_spec import LoadSpec, model_generation_config
from shared.plans import parse_plan
from shared.rewards.functions import ask_judge, check_rewards, judge_messages, parse_judge_score
from shared.rewards.judges import JudgeTarget
from shared.rewards.process import RewardScorer
from tests.shared.serving.serving import ServingProcess
from tests.trainer_worker.doubles import RecordingReporter

PROMPTS = ["Add: 2 + 3", "Reverse: stone", "What is the answer?", "Say hello"] * 2
COMPLETIONS = ["5", "enots", "yes", "hello", "6", "stone", "no", "bye"]
ANSWERS = ["5", "enots", "yes", "hello", "5", "enots", "yes", "hello"]


@pytest.fixture(scope="module")
def judge(model_dir, tmp_path_factory):
    spec = LoadSpec(model="builtin/tiny-qwen3", model_dir=str(model_dir), dtype="fp32",
                    generation_config=model_generation_config(model_dir), batch_invariant=True,
                    served_model_name="judge")
    proc = ServingProcess(spec, tmp_path_factory.mktemp("judge")).start().wait_ready()
    yield proc
    proc.terminate()


def call(function, step=0):
    return function(prompts=PROMPTS, completions=COMPLETIONS, completion_ids=[[1]] * len(COMPLETIONS),
                    answer=ANSWERS, trainer_state=SimpleNamespace(global_step=step), log_extra=None, log_metric=None)


def test_functions_read_the_dataset_columns_and_count_their_time():
    clock = RewardClock()
    rewards = [{"function": "exact_match", "weight": 1.0}, {"function": "length", "target": 5, "weight": 0.1},
               {"function": "exact_match", "weight": 2.0}]
    functions = trl_reward_functions(rewards, registered={}, judge_address=None, reporter=None, clock=clock)
    assert [f.__name__ for f in functions] == ["exact_match#1", "length", "exact_match#3"]
    assert call(functions[0]) == [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert call(functions[1])[0] == pytest.approx(-0.8)  # "5" is 4 characters short of 5
    assert clock.seconds > 0


def test_a_registered_function_receives_its_parameters_from_the_plan():
    """The rewards as the plan stores them (parsed by the API's schema), scored the way the engine
    does: each registered function is called with its entry's parameters as keyword arguments."""
    registered = {"at_least": "tests.shared.rewards.test_rewards:thresholded_reward",
                  "anything": "tests.shared.rewards.test_rewards:open_reward"}
    plan = parse_plan({"method": "grpo", "model": "builtin/tiny-qwen3", "dataset": "ds", "grpo": {"rewards": [
        {"function": "at_least", "threshold": 5, "scale": 0.5},
        {"function": "anything", "scale": 2, "words": ["a", "b"], "unused": None}]}})
    rewards = plan["grpo"]["rewards"]
    check_rewards(rewards, registered=registered)
    at_least, anything = trl_reward_functions(rewards, registered=registered, judge_address=None, reporter=None,
                                              clock=RewardClock())
    assert call(at_least) == [0.5 if len(c) >= 5 else 0.0 for c in COMPLETIONS]  # threshold 5, scale 0.5
    assert call(anything) == [2.0 + 2 * len(c) for c in COMPLETIONS]  # two parameters given (null is not), scale 2


def test_a_registered_function_past_its_budget_fails_the_step_naming_it():
    """A deployment's function that hangs holding its interpreter lock (Python's re on issue 26's
    pattern) runs in a process of its own: TRL's call of it raises with the step and the reward."""
    reference = "tests.shared.rewards.test_reward_process:catastrophic_reward"
    rewards = [{"function": "exact_match", "weight": 1.0}, {"function": "stuck", "weight": 1.0}]
    with RewardScorer(rewards, {"stuck": reference}, budget_s=2.0) as scorer:
        exact, stuck = trl_reward_functions(rewards, registered={"stuck": reference}, judge_address=None,
                                            reporter=None, clock=RewardClock(), scorer=scorer)
        with pytest.raises(WorkFailed) as caught:
            call(stuck, step=2)
        assert str(caught.value) == reasons.reward_call_overran("step 3", "stuck", reference, 2.0)
        assert call(exact) == [1.0] * 4 + [0.0] * 4  # built-ins run here, untouched


def test_a_judge_scores_each_completion_and_reports_answers_with_no_number(judge):
    reporter, clock = RecordingReporter(), RewardClock()
    (function,) = trl_reward_functions([{"judge": "ep-judge", "weight": 1.0}], registered={},
                                       judge_address=lambda name: JudgeTarget(judge.base_url, None) if name == "ep-judge" else None,
                                       reporter=reporter, clock=clock)
    assert function.__name__ == "judge:ep-judge"
    scores = call(function, step=4)
    # What the judge answers each completion (greedy, so the same again), read the same way.
    expected = [parse_judge_score(ask_judge(judge.base_url, judge_messages(p, c, {"answer": a})))
                for p, c, a in zip(PROMPTS, COMPLETIONS, ANSWERS)]
    assert scores == [0.0 if e is None else e for e in expected]
    unparsable = sum(e is None for e in expected)
    warnings = [m for level, m in reporter.events if level == "warn"]
    if unparsable:
        assert warnings == [reasons.grpo_judge_unparsable("ep-judge", unparsable, 5)]
    else:
        assert warnings == []
    assert clock.seconds > 0


def test_a_judge_that_never_answers_fails_the_run_saying_so():
    (function,) = trl_reward_functions([{"judge": "grader", "weight": 1.0}], registered={},
                                       judge_address=lambda name: None, reporter=RecordingReporter(),
                                       clock=RewardClock(), judge_wait_s=0.5)
    with pytest.raises(WorkFailed) as failed:
        call(function)
    assert str(failed.value) == reasons.grpo_judge_unreachable("grader", 0.5, "it is not READY")
    assert str(failed.value) == ("judge endpoint grader did not answer for 0.5s (it is not READY); "
                                 "the run cannot score its completions")


def test_reasons_word_for_word():
    assert reasons.grpo_judge_unparsable("ep-j", 3, 7) == (
        "judge endpoint ep-j answered 3 completion(s) of step 7 with no score in 0..10; they score 0")
    assert reasons.grpo_batch_not_a_multiple(batch_size=6, generations=4) == (
        "batchSize 6 is not a multiple of grpo.numGenerations 4; a grpo step trains on whole groups of "
        "completions of one prompt")
    assert reasons.batch_not_split(batch_size=4, gpus=2, accumulation=4) == (
        "batchSize 4 does not split evenly over 2 GPU(s) x gradientAccumulation 4; batchSize is the global batch, "
        "the same on any GPU count, so it must be a multiple of their product")
    assert reasons.GRPO_NEEDS_REWARDS == "a grpo run needs at least one reward in grpo.rewards"
    assert reasons.GRPO_NO_VALIDATION == (
        "a grpo run scores no validationDataset yet; its metrics carry the reward of every step")
    assert reasons.grpo_on_sft_run("sft") == "grpo settings apply to grpo runs, and this run's method is sft"
