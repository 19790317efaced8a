"""Judges in one place (shared/rewards/judges.py): what a run or an evaluation names, found by id or by name
within a workload, refused, waited for, and kept alive while in use; against a real Redis where a
store is read. The services' own paths through it: tests/api/test_evaluations.py and
test_grpo_plans.py (refusals), tests/trainer_worker/test_evaluation_job.py and test_grpo_judges.py
(the worker), tests/endpoint_manager/test_manager.py (the idle stop)."""

from __future__ import annotations

import pytest

from shared import reasons
from shared.errors import NotFound, Unprocessable
from shared.store.endpoint_names import create_endpoint_doc
from shared.store.ids import Kind, new_id
from shared.rewards.judges import (JudgeNotReady, JudgeTarget, accept_judge, find_judge, judge_in_use, judge_refs,
                           names_judge, target_of, wait_until_ready)
from shared.store.documents import Store, connect
from tests.shared.plans.plan_fixtures import typed


@pytest.fixture
def store(redis_url, keys):
    client = connect(redis_url)
    yield Store(client, keys)
    client.close()


def endpoint(store, name, workload, *, phase="READY") -> dict:
    return create_endpoint_doc(store, {"id": new_id(Kind.ENDPOINT), "kind": "endpoint", "name": name,
                                       "workload": workload, "phase": phase, "address": "http://127.0.0.1:9/"})


def grpo_run(status, judge, scopes=None) -> dict:
    plan = typed({"method": "grpo", "grpo": {"rewards": [{"function": "exact_match"}, {"judge": judge}]}})
    return {"id": new_id(Kind.RUN), "kind": "run", "status": status, "plan": plan.to_dict(),
            "judgeWorkloads": scopes or {}}


def evaluation(status, judge, scopes=None) -> dict:
    return {"id": new_id(Kind.EVALUATION), "kind": "evaluation", "status": status, "judge": judge,
            "judgeWorkloads": scopes or {}}


def test_a_run_and_an_evaluation_name_their_judges_with_the_workload_each_was_found_in():
    assert judge_refs(grpo_run("RUNNING", "grader", {"grader": "team-a"})) == {"grader": "team-a"}
    assert judge_refs(evaluation("QUEUED", "grader", {"grader": "team-a"})) == {"grader": "team-a"}
    assert judge_refs(evaluation("QUEUED", "ep-1")) == {"ep-1": None}  # stored before scopes: any workload
    assert judge_refs(evaluation("QUEUED", None)) == {}


@pytest.mark.parametrize("document", [grpo_run, evaluation])
def test_a_name_names_the_endpoint_of_the_workload_it_was_found_in_only(document):
    mine = {"id": "ep-1", "name": "grader", "workload": "team-a"}
    theirs = {"id": "ep-2", "name": "grader", "workload": "endpoints"}
    scoped = document("RUNNING", "grader", {"grader": "team-a"})
    assert names_judge(scoped, mine) and not names_judge(scoped, theirs)
    assert names_judge(document("RUNNING", "ep-2"), theirs)  # an id names one endpoint wherever it is
    assert not names_judge(document("SUCCEEDED", "grader", {"grader": "team-a"}), mine)  # ended: holds nothing


def test_the_idle_stop_asks_whether_a_live_run_or_evaluation_names_the_endpoint(store):
    judge = endpoint(store, "grader", "team-a")
    assert not judge_in_use(store, judge)
    ended = store.create(evaluation("SUCCEEDED", "grader", {"grader": "team-a"}))
    elsewhere = store.create(evaluation("RUNNING", "grader", {"grader": "endpoints"}))
    assert not judge_in_use(store, judge)  # one has ended, the other names another workload's grader
    live = store.create(evaluation("RUNNING", "grader", {"grader": "team-a"}))
    assert judge_in_use(store, judge)
    store.update(live["id"], lambda d: {**d, "status": "CANCELLED"})
    store.create(grpo_run("PAUSED", judge["id"]))
    assert judge_in_use(store, judge) and ended and elsewhere


def test_found_by_id_or_name_among_the_callers_workloads_and_refused_alike(store):
    mine, theirs = endpoint(store, "grader", "team-a"), endpoint(store, "other", "endpoints")
    for ref in (mine["id"], "grader"):
        found = find_judge(store, ref, workloads=["team-a"])
        assert found["id"] == mine["id"] and accept_judge(found, ref, field="judge") == "team-a"
    # another workload's endpoint, by id or name, is no endpoint at all; an admin (None) sees it
    assert find_judge(store, theirs["id"], workloads=["team-a"]) is None
    assert find_judge(store, "other", workloads=["team-a"]) is None
    assert find_judge(store, "other", workloads=None)["id"] == theirs["id"]
    with pytest.raises(NotFound) as refused:
        accept_judge(None, "other", field="judge")
    assert refused.value.message == reasons.judge_unknown("other") and refused.value.details == {"field": "judge"}
    store.update(mine["id"], lambda d: {**d, "phase": "FAILED"})
    with pytest.raises(Unprocessable) as refused:
        accept_judge(find_judge(store, mine["id"], workloads=["team-a"]), mine["id"], field="grpo.rewards.0.judge")
    assert refused.value.message == reasons.judge_ended(mine["id"], "FAILED")
    assert find_judge(store, "grader", workloads=["team-a"]) is None  # a name names live endpoints only


def test_the_sentences_of_a_judge_refused_at_submission():
    assert reasons.judge_unknown("grader") == (
        "judge grader is not an endpoint of this deployment; `training endpoints get` lists them")
    assert reasons.judge_ended("grader", "TERMINATED") == (
        "judge endpoint grader is TERMINATED; start another endpoint to judge with")


def test_a_judge_is_asked_under_the_name_its_process_serves_the_endpoint_by():
    base = {"id": "ep-1", "phase": "READY", "address": "http://h:1/", "servedModel": "ep-1", "adapterName": None,
            "process": {"apiKey": "k"}}
    tuned = {**base, "servedModel": "builtin/tiny-qwen3", "adapterName": "ep-1", "process": None}
    assert target_of(base) == JudgeTarget("http://h:1", "ep-1", "k")
    assert target_of(tuned) == JudgeTarget("http://h:1", "ep-1", None)
    assert target_of({**base, "phase": "STARTING"}) is None and target_of({**base, "address": None}) is None


def test_waiting_for_a_judge_until_it_is_ready():
    phases = iter(["QUEUED", "STARTING", "READY"])
    waits: list[str] = []

    def find(ref):
        return {"id": ref, "phase": next(phases), "address": "http://h:1"}

    target = wait_until_ready(find, "ep-1", wait_s=60, poll_s=0, on_wait=waits.append)
    assert target == JudgeTarget("http://h:1", "ep-1", None) and waits == ["QUEUED"]  # said once
    for doc, phase in (({"id": "ep-1", "phase": "TERMINATED"}, "TERMINATED"), (None, "gone")):
        with pytest.raises(JudgeNotReady) as failed:  # no wait for one that ended or is gone
            wait_until_ready(lambda ref: doc, "ep-1", wait_s=60, poll_s=0, on_wait=waits.append)
        assert failed.value.phase == phase and waits == ["QUEUED"]
    with pytest.raises(JudgeNotReady) as failed:
        wait_until_ready(lambda ref: {"id": ref, "phase": "STARTING"}, "ep-1", wait_s=60, poll_s=0,
                         should_stop=lambda: True)
    assert failed.value.phase == "STARTING"
