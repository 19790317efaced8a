"""A step's rollout sample is bounded (groups, completions, characters) and the store keeps only
the last SAMPLE_STEPS steps of a run, in a real Redis."""

from __future__ import annotations

import math

import redis

from shared.store.keys import Keys
from shared.store.rollout_samples import (
    SAMPLE_COMPLETIONS,
    SAMPLE_GROUPS,
    SAMPLE_STEPS,
    SAMPLE_TEXT_CHARS,
    as_text,
    latest_per_step,
    step_sample,
)
from shared.store.documents import Store


def rollouts(groups: int, size: int, *, text_chars: int = 10):
    prompts = [f"prompt {g}" for g in range(groups) for _ in range(size)]
    completions = [("x" * text_chars) + f"{g}.{i}" for g in range(groups) for i in range(size)]
    return prompts, completions


def test_a_large_step_is_cut_to_its_bounds_and_says_so():
    groups, size = SAMPLE_GROUPS + 3, SAMPLE_COMPLETIONS + 4
    prompts, completions = rollouts(groups, size, text_chars=SAMPLE_TEXT_CHARS + 50)
    count = groups * size
    sample = step_sample(step=7, prompts=prompts, completions=completions,
                         scores={"exact_match": [1.0] * count, "length": [0.5] * count},
                         weights={"exact_match": 2.0, "length": 1.0}, advantages=[0.25] * count, group_size=size)
    assert sample["step"] == 7 and sample["groupsInStep"] == groups and sample["completionsInStep"] == count
    assert [g["prompt"] for g in sample["groups"]] == [f"prompt {g}" for g in range(SAMPLE_GROUPS)]
    for group in sample["groups"]:
        assert len(group["completions"]) == SAMPLE_COMPLETIONS and group["promptTruncated"] is False
        for c in group["completions"]:
            assert len(c["text"]) == SAMPLE_TEXT_CHARS and c["truncated"] is True
            assert c["scores"] == {"exact_match": 1.0, "length": 0.5}
            assert c["reward"] == 2.5 and c["advantage"] == 0.25


def test_groups_with_the_same_prompt_stay_apart_and_missing_scores_are_none():
    prompts = ["same"] * 4
    sample = step_sample(step=1, prompts=prompts, completions=["a", "b", "c", "d"],
                         scores={"judge": [1.0, math.nan, None, 0.0]}, weights={"judge": 1.0},
                         advantages=[1.0, 0.0, math.nan, -1.0], group_size=2)
    assert [[c["text"] for c in g["completions"]] for g in sample["groups"]] == [["a", "b"], ["c", "d"]]
    completions = [c for g in sample["groups"] for c in g["completions"]]
    assert [c["scores"]["judge"] for c in completions] == [1.0, None, None, 0.0]
    assert [c["reward"] for c in completions] == [1.0, None, None, 0.0]
    assert [c["advantage"] for c in completions] == [1.0, 0.0, None, -1.0]


def test_chat_prompts_read_as_one_line_per_message():
    prompt = [{"role": "system", "content": "Be brief."},
              {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is it?"}]}]
    assert as_text(prompt) == "system: Be brief.\nuser: [image] What is it?"
    assert as_text([{"role": "assistant", "content": "42"}]) == "assistant: 42"


def test_the_store_keeps_the_last_steps_only(redis_url, key_prefix):
    store = Store(redis.Redis.from_url(redis_url, decode_responses=True), Keys(key_prefix))
    for step in range(1, SAMPLE_STEPS + 11):
        store.add_samples("run-1", {"step": step, "groups": []}, keep=SAMPLE_STEPS)
    kept = store.samples("run-1")
    assert [s["step"] for s in kept] == list(range(11, SAMPLE_STEPS + 11))
    store.add_samples("run-1", {"step": SAMPLE_STEPS + 5, "groups": [], "attempt": 1}, keep=SAMPLE_STEPS)
    latest = latest_per_step(store.samples("run-1"))
    assert [s["step"] for s in latest[:7]] == [SAMPLE_STEPS + 10 - i for i in range(7)]
    assert next(s for s in latest if s["step"] == SAMPLE_STEPS + 5)["attempt"] == 1
    assert len(latest) == SAMPLE_STEPS - 1  # step 11 fell off as the 201st entry came in
