"""Registered reward functions run in a process of their own, each call under a time budget
(shared/rewards/process.py): one that hangs in C code holding the interpreter lock is stopped and
fails the call with a sentence, and the caller's threads (the worker's lease renewal) keep running
meanwhile (issue 26)."""

from __future__ import annotations

import os
import re

import pytest
import redis

from services.trainer_worker.lease import Lease
from shared import reasons
from shared.errors import WorkFailed
from shared.rewards.process import RewardScorer, call_budget_s

HERE = __name__


def catastrophic_reward(completion, row):
    """Python's own re on the pattern of issue 26: exponential backtracking inside one C call, which
    holds the interpreter lock the whole time (this is what stalled a worker in-process)."""
    return 1.0 if re.fullmatch("(.*.*)*Z", "a" * 40) else 0.0


def raising_reward(completion, row):
    return 1 / 0


def exiting_reward(completion, row):
    os._exit(3)


def chatty_reward(completion, row, *, scale=1.0):
    print("a reward that prints", completion)  # goes to stderr, never into the answers
    return scale * len(completion)


def environment_reward(completion, row, *, name):
    return 1.0 if name in os.environ else 0.0


def registered(*names: str) -> dict[str, str]:
    return {name: f"{HERE}:{name}" for name in names}


def test_a_registered_function_is_scored_in_a_process_of_its_own():
    rewards = [{"function": "chatty_reward", "scale": 2.0}, {"function": "exact_match"}]
    with RewardScorer(rewards, registered("chatty_reward")) as scorer:
        assert scorer.score(0, ["ab", "abc"], [{}, {}], where="step 1") == [4.0, 6.0]
        assert scorer.score_one("4", {"answer": "4"}, where="row 0") == {"chatty_reward": 2.0, "exact_match": 1.0}
        assert scorer._process.proc.pid != os.getpid()


@pytest.mark.timeout(120)
def test_a_call_past_its_budget_is_stopped_with_a_sentence_and_the_next_call_runs(redis_url, keys, monkeypatch):
    """The lease of a run, renewed by a thread of this process as the worker's is, stays held while a
    reward hangs for longer than the lease's time to live."""
    from services.trainer_worker import lease as leases

    monkeypatch.setattr(leases, "RENEW_EVERY_S", 0.1)
    monkeypatch.setattr(leases, "LEASE_TTL_MS", 1_000)
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    lease = Lease(client, keys, "run-hostile", "test")
    assert lease.acquire()
    rewards = [{"function": "catastrophic_reward"}, {"function": "chatty_reward"}]
    try:
        with RewardScorer(rewards, registered("catastrophic_reward", "chatty_reward"), budget_s=3.0) as scorer:
            scorer.score(1, ["warm"], [{}], where="step 1")  # the process is up, its imports done
            with pytest.raises(WorkFailed) as caught:
                scorer.score(0, ["x"], [{}], where="step 2")
            assert str(caught.value) == reasons.reward_call_overran("step 2", "catastrophic_reward",
                                                                    f"{HERE}:catastrophic_reward", 3.0)
            assert str(caught.value) == (f"step 2: reward catastrophic_reward ({HERE}:catastrophic_reward) did not "
                                         "score a completion within 3s, so it was stopped (the budget of one reward "
                                         "call is TRAINING_REWARD_CALL_BUDGET_S on the worker)")
            assert not lease.lost.is_set() and client.get(lease.key) == lease.token
            assert scorer.score(1, ["abc"], [{}], where="step 3") == [3.0]  # a fresh process
    finally:
        lease.release()


def test_a_function_that_raises_or_ends_its_process_fails_the_call_saying_so():
    rewards = [{"function": "raising_reward"}, {"function": "exiting_reward"}, {"function": "chatty_reward"}]
    with RewardScorer(rewards, registered("raising_reward", "exiting_reward", "chatty_reward")) as scorer:
        with pytest.raises(WorkFailed) as raised:
            scorer.score(0, ["a", "b"], [{}, {}], where="row 4")
        assert str(raised.value) == "row 4: reward raising_reward failed on a completion: division by zero"
        with pytest.raises(WorkFailed) as ended:
            scorer.score(1, ["a"], [{}], where="step 7")
        assert str(ended.value) == reasons.reward_process_ended("step 7", "exiting_reward", "exited with code 3")
        assert str(ended.value) == "step 7: the process scoring reward exiting_reward exited with code 3 before " \
                                   "it gave a score"
        assert scorer.score(2, ["ab"], [{}], where="step 8") == [2.0]


def test_the_reward_process_gets_no_secret_of_the_worker(monkeypatch):
    monkeypatch.setenv("TRAINING_ADMIN_TOKEN", "admin-token-for-this-test")
    monkeypatch.setenv("TRAINING_REDIS_URL", "redis://:password@127.0.0.1:1/0")
    monkeypatch.setenv("HF_HOME", "/tmp/hf-home-for-this-test")
    rewards = [{"function": "environment_reward", "name": name}
               for name in ("TRAINING_ADMIN_TOKEN", "TRAINING_REDIS_URL", "HF_HOME", "PATH")]
    with RewardScorer(rewards, registered("environment_reward")) as scorer:
        assert [scorer.score(i, ["x"], [{}], where="row 0")[0] for i in range(4)] == [0.0, 0.0, 1.0, 1.0]


def test_the_budget_comes_from_the_environment_with_a_default():
    assert call_budget_s({}) == 30.0
    assert call_budget_s({"TRAINING_REWARD_CALL_BUDGET_S": "2.5"}) == 2.5
    assert call_budget_s({"TRAINING_REWARD_CALL_BUDGET_S": "soon"}) == 30.0


def test_scoring_built_ins_starts_no_process():
    scorer = RewardScorer([{"function": "regex", "pattern": "(.*.*)*Z"}])
    assert scorer.score(0, ["a" * 1000, "aZ"], [{}, {}], where="row 0") == [0.0, 1.0]
    assert scorer._process is None
