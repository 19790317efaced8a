"""A run that fails says why in words, never with a Python class name (issue 28): whatever its work
raised, `leased_work.execute` (called as the Celery task calls it, on real Redis, its claim granted and
dispatched by the scheduler's own code) ends it FAILED with one plain sentence (shared/errors.WorkFailed).
The evaluations' failure paths: tests/trainer_worker/test_evaluation_job.py. Every test's details
and events are also looked through for class names as its keys are deleted (tests/conftest.py).

The one stand-in: `_run_engine` is replaced by a function that raises what an engine may raise; it
trains nothing."""

from __future__ import annotations

import pytest
from jinja2.exceptions import TemplateError

from services.trainer_worker import leased_work, run_job
from shared import reasons
from shared.errors import ValidationFailed, WorkFailed
from tests.trainer_worker.granted_runs import grant_run, live_worker
from tests.user_text import class_names_in


class OutOfMemoryError(RuntimeError):
    """Named as torch's is: the name must not reach the user, its words must."""


@pytest.fixture
def worker(config):
    return live_worker(config)


@pytest.fixture
def granted(worker, config):
    return lambda: grant_run(worker, config)


@pytest.mark.parametrize(("raised", "sentence"), [
    (WorkFailed(reasons.rank_failed(rank=1, world=2, how="was killed by SIGKILL")),
     "rank 1 of 2 was killed by SIGKILL; the other ranks were stopped"),
    (ValidationFailed("rewards.0.threshold: reward function exact_match takes no parameter threshold"),
     "rewards.0.threshold: reward function exact_match takes no parameter threshold"),
    (OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
     "training ran out of memory: CUDA out of memory. Tried to allocate 2.00 GiB; lower batchSize (raising "
     "gradientAccumulation keeps the same global batch) or maxSeqLength, or train on more GPUs"),
    (ValueError("num_samples should be a positive integer value, but got num_samples=0"),
     "no row is left to train on: no row has a token the loss is taken over (a row whose prompt fills the length "
     "is dropped). Raise maxSeqLength, or shorten the rows' prompts"),
    (ValueError("Cannot use chat template functions because tokenizer.chat_template is not set and no template "
                "argument was passed!"),
     "the model's tokenizer has no chat template, so chat rows cannot be tokenized; train on prompt and "
     "completion rows, or on a model with a chat template"),
    (TemplateError("Conversation roles must alternate user/assistant/user/assistant/..."),
     "the model's chat template could not render a row: Conversation roles must alternate "
     "user/assistant/user/assistant/...; check the rows' roles and their order (many templates want user and "
     "assistant turns in turn, and a system turn only first)"),
    (KeyError("learningRate"),
     "no key 'learningRate' where one was looked up (the worker did not foresee this error; its log has the "
     "traceback)"),
    (AssertionError(),
     "an error that gave no message (the worker did not foresee this error; its log has the traceback)"),
])
def test_a_failed_run_says_why_in_words(worker, granted, monkeypatch, raised, sentence):
    def engine(*args, **kwargs):
        raise raised

    monkeypatch.setattr(run_job, "_run_engine", engine)
    run_id, claim = granted()
    assert leased_work.execute(worker, "run", run_id, claim["id"]) == "FAILED"
    run = worker.store.get(run_id)
    assert run["detail"] == reasons.run_failed(sentence) == f"training failed: {sentence}"
    events = [e["message"] for e in worker.store.events(run_id)]
    assert events[-1] == run["detail"]
    assert [text for text in [run["detail"], *events] if class_names_in(text)] == []
    assert worker.claims().get(claim["id"])["state"] == "RELEASED"


def test_the_class_name_test_sees_class_names():
    assert class_names_in("evaluation failed: ValidationFailed: rewards.0.threshold: ...") == ["ValidationFailed"]
    assert class_names_in("training failed: torch.OutOfMemoryError: CUDA out of memory") == ["OutOfMemoryError"]
    assert class_names_in("training failed: RewardCallFailed: step 3: reward r failed") == ["RewardCallFailed"]
    assert class_names_in("rank 1 of 2 was killed by SIGKILL; the other ranks were stopped") == []
