"""The sentences a failed run or evaluation shows (shared/errors.WorkFailed, shared/reasons/), word
for word: an exception's own words without its class name, and the worker's own failures."""

from __future__ import annotations

from shared import reasons
from shared.errors import NotFound, WorkFailed


def test_an_error_in_words():
    assert reasons.error_text(ZeroDivisionError("division by zero")) == "division by zero"
    assert reasons.error_text(KeyError("answer")) == "no key 'answer' where one was looked up"
    assert reasons.error_text(RuntimeError("  ")) == "an error that gave no message"
    assert reasons.traceback_error_text("torch.OutOfMemoryError: CUDA out of memory") == "CUDA out of memory"
    assert reasons.traceback_error_text("KeyboardInterrupt") == "an error that gave no message"


def test_work_failed_of_whatever_the_work_raised():
    said = WorkFailed(reasons.DATASET_EMPTY)
    assert WorkFailed.of(said) is said
    assert WorkFailed.of(NotFound("snapshot snap-x does not exist")).sentence == "snapshot snap-x does not exist"
    assert WorkFailed.of(OSError("disk gone")).sentence == (
        "disk gone (the worker did not foresee this error; its log has the traceback)")


def test_the_workers_own_failures():
    assert reasons.engine_missing("sft-triple") == "this worker has no engine sft-triple"
    assert reasons.snapshot_training_state_unreadable("snap-1") == (
        "snapshot snap-1 holds no training state this deployment reads")
    assert reasons.rollout_server_ended("exited with code 1", "CUDA out of memory") == (
        "the rollout server exited with code 1 before it was ready: CUDA out of memory")
    assert reasons.rollout_server_ended("was killed by SIGKILL", "") == (
        "the rollout server was killed by SIGKILL before it was ready")
    assert reasons.rollout_server_not_ready(300, "") == "the rollout server did not answer within 300s"
    assert reasons.rollout_server_not_ready(300, "no port") == (
        "the rollout server did not answer within 300s; the last error in its log: no port")
    assert reasons.rollout_server_refused("/v1/load_lora_adapter", 400, "bad") == (
        "the rollout server answered /v1/load_lora_adapter with 400: bad")
    assert reasons.rollout_server_short(answered=3, prompts=2, n=2) == (
        "the rollout server answered 3 completions for 2 prompt(s) x 2")
    assert reasons.dataset_line_without_prompt(4) == "dataset line 4 has no prompt"
    assert reasons.dataset_line_without_question(4) == "dataset line 4 has no messages before its answer"
    assert reasons.dataset_line_not_sft(2) == "dataset line 2 has neither messages nor prompt and completion"
    assert reasons.judge_answered_error(503) == "its serving process answered HTTP 503"
    assert reasons.judge_answered_error(None) == "its serving process answered with an error"
    assert reasons.serving_failed("x") == "the server failed to answer: x"
    assert reasons.generation_failed("x") == "generation failed: x"
    assert reasons.serving_route_refused("Not Found", "GET", "/v1/nothing") == "Not Found: GET /v1/nothing"
