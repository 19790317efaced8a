"""Issue 29 items 3 and 4, word for word: how long answers run, and a grpo step that learns nothing."""

from __future__ import annotations

import pytest

from shared import reasons

SENTENCES = [
    (reasons.evaluation_max_tokens_text(40, "references", 24),
     "40 token(s) (the longest reference, 24, plus a margin of 16)"),
    (reasons.evaluation_max_tokens_text(64, "model", None), "64 token(s) (the model's max_new_tokens; no row has a reference)"),
    (reasons.evaluation_max_tokens_text(1024, "deployment", None),
     "1024 token(s) (the deployment's limit; no row has a reference and the model does not say)"),
    (reasons.evaluation_max_tokens_text(12, "request", None), "12 token(s) (as asked)"),
    (reasons.evaluation_max_tokens_text(12, None, None), "12 token(s)"),
    (reasons.EVALUATION_MAX_TOKENS_PENDING,
     "from its rows: the longest reference plus a margin (decided when it starts scoring)"),
    (reasons.generation_defaults_text({"temperature": 0.0, "topP": 1.0, "topK": 0, "repetitionPenalty": 1.0,
                                       "maxTokens": 64, "maxTokensFrom": "model", "maxContext": 2048}),
     "greedy; answers up to 64 token(s) (the model's max_new_tokens), within the rest of its 2048-token context"),
    (reasons.generation_defaults_text({"temperature": 0.6, "topP": 0.95, "topK": 20, "repetitionPenalty": 1.05,
                                       "maxTokens": 1024, "maxTokensFrom": "deployment", "maxContext": None}),
     "temperature 0.6, top_p 0.95, top_k 20, repetition penalty 1.05; answers up to 1024 token(s) "
     "(the deployment's limit), within the rest of its context"),
]


@pytest.mark.parametrize("said, expected", SENTENCES)
def test_sentence(said, expected):
    assert said == expected


def test_a_step_that_learned_nothing():
    said = reasons.grpo_step_learned_nothing(step=7, share=1.0, groups=4, reward=0.0, last=True)
    assert said == ("step 7 learned nothing: in 4 of 4 group(s) every completion got the same reward (mean reward "
                    "0.0000), so every advantage is 0. Try more generations, a higher temperature, a harder dataset, "
                    "or rewards that tell completions apart; later such steps are counted in the metric "
                    "equalRewardGroupShare, not logged")
    assert reasons.grpo_step_learned_nothing(step=1, share=1.0, groups=0, reward=None, last=False).startswith(
        "step 1 learned nothing: in 100% of the groups every completion got the same reward, so")
