"""The worker's evaluation job (services/trainer_worker/evaluation_job.py) called as the Celery task
calls it, on real Redis and the real tiny model: the paths the end-to-end test does not take
(a claim no longer granted, a lease held elsewhere, a judge that is not READY, a scoring error,
a cancel before it starts). Success and cancel while running: tests/e2e/test_evaluations.py."""

from __future__ import annotations

import json
import threading
import time

import pytest

from services.trainer_worker import evaluation_job, work_reporter
from services.trainer_worker.leased_work import execute
from services.trainer_worker.node_worker import Worker
from shared.artifacts import dataset_key
from shared.claims.queue import ClaimQueue
from shared.endpoint_names import create_endpoint_doc
from shared.ids import Kind, new_id
from tests.conftest import mark_nodes_alive


@pytest.fixture
def worker(config):
    worker = Worker(config, "local")
    mark_nodes_alive(worker.redis, worker.keys, config)  # the grant pass grants only on live nodes
    return worker


@pytest.fixture
def granted(worker, config):
    """A STARTING evaluation with a granted claim on node local, as the scheduler leaves it."""

    def make(**fields):
        data = json.dumps({"prompt": "Add: 1 + 1", "completion": "2"}).encode() + b"\n"
        digest = "e" * 64
        worker.artifacts.put_file(dataset_key(digest), data)
        evaluation_id = new_id(Kind.EVALUATION)
        doc = {"id": evaluation_id, "kind": "evaluation", "status": "QUEUED", "workload": "evaluations",
               "model": "builtin/tiny-qwen3", "snapshot": None, "dataset": "ds-x", "datasetDigest": digest,
               "gpus": 1, "pool": "default", "judge": None, "rewards": None, "maxTokens": 2,
               "progress": {"rows": 0, "totalRows": 1}, "metrics": None, "results": None,
               "cancelRequested": False, "attempts": 0, "scheduling": None, **fields}
        worker.store.create(doc)
        queue = ClaimQueue(worker.redis, worker.keys, config=config)
        claim = queue.submit(kind="evaluation", resource_id=evaluation_id, pool="default", gpus=1,
                             workload="evaluations")
        queue.grant_pass(config, "default")
        claim = queue.get(claim["id"])
        worker.store.update(evaluation_id, lambda d: {**d, "status": "STARTING",
                                                      "scheduling": {"claim": claim["id"], "pool": "default"}})
        return evaluation_id, claim

    return make


def test_a_claim_no_longer_granted_or_leased_elsewhere_is_skipped(worker, granted):
    evaluation_id, claim = granted()
    assert execute(worker, "evaluation", evaluation_id, "claim-nope") == "skipped: claim not granted"
    worker.redis.set(worker.keys.lease(evaluation_id), "someone-else")
    assert execute(worker, "evaluation", evaluation_id, claim["id"]) == "skipped: leased elsewhere"
    assert worker.store.get(evaluation_id)["status"] == "STARTING"


def test_a_judge_that_is_not_ready_in_time_fails_it_with_its_sentence(worker, granted, monkeypatch):
    monkeypatch.setattr(evaluation_job, "JUDGE_WAIT_S", 1.0)
    judge = new_id(Kind.ENDPOINT)
    worker.store.create({"id": judge, "kind": "endpoint", "workload": "endpoints", "phase": "STARTING",
                         "address": None})
    evaluation_id, claim = granted(judge=judge)
    assert execute(worker, "evaluation", evaluation_id, claim["id"]) == "FAILED"
    doc = worker.store.get(evaluation_id)
    assert doc["detail"] == (f"judge endpoint {judge} is STARTING; an evaluation scores with a judge only while "
                             "it is READY")
    messages = [e["message"] for e in worker.store.events(evaluation_id)]
    assert f"waiting up to 1s for judge endpoint {judge} (STARTING) to be READY" in messages
    assert doc["finishedAt"] and worker.claims().get(claim["id"])["state"] == "RELEASED"
    assert not worker.redis.exists(worker.keys.lease(evaluation_id))


def test_a_judge_that_has_ended_fails_it_without_waiting(worker, granted):
    judge = new_id(Kind.ENDPOINT)
    worker.store.create({"id": judge, "kind": "endpoint", "workload": "endpoints", "phase": "TERMINATED",
                         "address": None})
    evaluation_id, claim = granted(judge=judge)
    started = time.monotonic()
    assert execute(worker, "evaluation", evaluation_id, claim["id"]) == "FAILED"
    assert time.monotonic() - started < evaluation_job.JUDGE_WAIT_S / 2
    assert worker.store.get(evaluation_id)["detail"] == (
        f"judge endpoint {judge} is TERMINATED; an evaluation scores with a judge only while it is READY")


def test_a_judge_named_by_name_is_looked_up_in_the_workload_it_was_found_in(worker, granted, monkeypatch):
    monkeypatch.setattr(evaluation_job, "JUDGE_WAIT_S", 1.0)
    for workload, phase, address in (("endpoints", "READY", "http://127.0.0.1:9"), ("team-a", "STARTING", None)):
        create_endpoint_doc(worker.store, {"id": new_id(Kind.ENDPOINT), "kind": "endpoint", "workload": workload,
                                           "name": "grader", "phase": phase, "address": address})
    evaluation_id, claim = granted(judge="grader", judgeWorkloads={"grader": "team-a"})
    assert execute(worker, "evaluation", evaluation_id, claim["id"]) == "FAILED"
    # team-a's grader, still STARTING: not the other workload's READY endpoint of the same name
    assert worker.store.get(evaluation_id)["detail"] == (
        "judge endpoint grader is STARTING; an evaluation scores with a judge only while it is READY")


def test_a_scoring_error_fails_it_and_the_worker_lives_on(worker, granted):
    evaluation_id, claim = granted(datasetDigest="0" * 64)  # its dataset file is missing
    assert execute(worker, "evaluation", evaluation_id, claim["id"]) == "FAILED"
    doc = worker.store.get(evaluation_id)
    assert doc["detail"].startswith("evaluation failed: [Errno 2] No such file or directory: ")  # no class name
    assert doc["detail"].endswith(" (the worker did not foresee this error; its log has the traceback)")
    assert [e["level"] for e in worker.store.events(evaluation_id)][-1] == "error"
    assert worker.claims().get(claim["id"])["state"] == "RELEASED"


def test_a_reward_parameter_its_function_does_not_take_fails_it_before_loading(worker, granted):
    """Checked again on the worker, where a deployment's registered functions import even when the
    API could not read their signature at submission."""
    evaluation_id, claim = granted(rewards=[{"function": "exact_match", "weight": 1.0, "threshold": 0.5}])
    assert execute(worker, "evaluation", evaluation_id, claim["id"]) == "FAILED"
    assert worker.store.get(evaluation_id)["detail"] == (
        "evaluation failed: rewards.0.threshold: reward function exact_match takes no parameter "
        "threshold; it takes field")
    assert worker.claims().get(claim["id"])["state"] == "RELEASED"


def test_a_cancel_before_it_starts_scoring_ends_it_cancelled(worker, granted):
    evaluation_id, claim = granted(cancelRequested=True)
    assert execute(worker, "evaluation", evaluation_id, claim["id"]) == "CANCELLED"
    doc = worker.store.get(evaluation_id)
    assert doc["detail"] == "cancelled by the user" and doc["metrics"] is None
    assert worker.claims().get(claim["id"])["state"] == "RELEASED"


def test_a_cancel_sent_while_the_model_loads_ends_it_cancelled_before_its_first_row(worker, granted, monkeypatch):
    """Issue 26: the cancel is read in the same write that moves it to RUNNING, not only by a
    throttled check that a short evaluation can finish before (held off for good here)."""
    import shared.load_spec

    monkeypatch.setattr(work_reporter, "CANCEL_CHECK_EVERY_S", 3600.0)
    real_load = shared.load_spec.load_model
    evaluation_id, claim = granted()

    def cancelled_while_loading(spec):
        worker.store.update(evaluation_id, lambda d: {**d, "cancelRequested": True})  # the API, meanwhile
        return real_load(spec)

    monkeypatch.setattr(shared.load_spec, "load_model", cancelled_while_loading)
    assert execute(worker, "evaluation", evaluation_id, claim["id"]) == "CANCELLED"
    doc = worker.store.get(evaluation_id)
    assert doc["detail"] == "cancelled by the user" and doc["metrics"] is None and doc.get("startedAt") is None
    assert worker.claims().get(claim["id"])["state"] == "RELEASED"


def test_a_worker_stopping_while_it_scores_gives_it_back_before_its_next_row(worker, granted, monkeypatch):
    """Issue 26 (services/trainer_worker/stopping.py): the stop comes as row 1 is scored; the
    evaluation stops before row 2 and its task gives it back (QUEUED keeping its place); the
    watchdog, which would end the process after the grace, has nothing left to do."""
    from services.trainer_worker import stopping
    from shared import reasons

    exited = threading.Event()
    stop = stopping.use(stopping.ChildStop(grace_s=30.0, exit=lambda code: exited.set()))
    try:
        rows = b"".join(json.dumps({"prompt": f"Say {i}:", "completion": str(i)}).encode() + b"\n" for i in range(5))
        worker.artifacts.put_file(dataset_key("f" * 64), rows)
        evaluation_id, claim = granted(datasetDigest="f" * 64)
        real_progress = evaluation_job.EvaluationReporter.progress

        def stop_during_the_first_row(self, done, total, **kw):
            if done == 1:
                stop.request()  # SIGTERM, as the wakeup pipe hears it
            return real_progress(self, done, total, **kw)

        monkeypatch.setattr(evaluation_job.EvaluationReporter, "progress", stop_during_the_first_row)
        assert execute(worker, "evaluation", evaluation_id, claim["id"]) == "requeued: worker stopping"
    finally:
        stopping.use(stopping._NeverStopped())
    doc = worker.store.get(evaluation_id)
    assert doc["status"] == "QUEUED" and doc["attempts"] == 1 and doc["metrics"] is None
    assert doc["progress"]["rows"] < 5
    assert reasons.worker_stopped_requeued("local") in [e["message"] for e in worker.store.events(evaluation_id)]
    assert worker.claims().current(evaluation_id)["seq"] == claim["seq"]
    time.sleep(0.2)
    assert not exited.is_set()


def test_it_scores_and_writes_its_rows_in_process(worker, granted):
    evaluation_id, claim = granted()
    assert execute(worker, "evaluation", evaluation_id, claim["id"]) == "SUCCEEDED"
    doc = worker.store.get(evaluation_id)
    assert doc["metrics"]["rows"] == 1 and doc["metrics"]["loss"] > 0 and doc["progress"] == {"rows": 1, "totalRows": 1}
    rows = worker.artifacts.path(doc["results"]["path"]).read_text().splitlines()
    assert len(rows) == 1 and json.loads(rows[0])["reference"] == "2"
    assert doc["fence"] >= 1 and doc["scheduling"]["devices"] == ["cpu:0"]


def test_without_max_tokens_it_runs_to_the_longest_reference_plus_a_margin_and_says_so(worker, granted):
    """Issue 29 item 3: not the model's 16 (or 64) tokens, but what the rows need, stored on the
    evaluation and said in its scoring event."""
    from shared import reasons
    from shared.models import load_tokenizer
    from shared.load_spec import load_spec_for

    long_answer = "the answer is " + "seven " * 30
    rows = json.dumps({"prompt": "Say it:", "completion": long_answer}).encode() + b"\n"
    rows += json.dumps({"prompt": "Add: 1 + 1", "completion": "2"}).encode() + b"\n"
    worker.artifacts.put_file(dataset_key("a" * 64), rows)
    evaluation_id, claim = granted(datasetDigest="a" * 64, maxTokens=None, progress={"rows": 0, "totalRows": 2})
    assert execute(worker, "evaluation", evaluation_id, claim["id"]) == "SUCCEEDED"
    doc = worker.store.get(evaluation_id)
    spec = load_spec_for(entry=worker.catalog.raw("builtin/tiny-qwen3"), artifacts=worker.artifacts,
                         served_model_name="x")
    longest = len(load_tokenizer(spec.model_dir)(long_answer, add_special_tokens=False)["input_ids"])
    used = longest + max(16, -(-longest // 4))
    assert longest > 64 and (doc["maxTokensUsed"], doc["maxTokensFrom"], doc["longestReferenceTokens"]) == (
        used, "references", longest)
    said = reasons.evaluation_max_tokens_text(used, "references", longest)
    assert any(said in e["message"] for e in worker.store.events(evaluation_id))
    results = [json.loads(line) for line in worker.artifacts.path(doc["results"]["path"]).read_text().splitlines()]
    assert all(r["completionTokens"] <= used for r in results)
    assert any(r["completionTokens"] > 64 for r in results)  # past the model's own max_new_tokens


def test_a_ready_judge_endpoint_is_asked_for_every_row(worker, granted, tmp_path):
    """A real built-in serving process of the tiny model is the judge; its address is what a READY
    endpoint document carries. Its (tiny-model) answers are parsed, or counted as unparsable with a
    warn event."""
    from shared.load_spec import load_spec_for
    from tests.shared.serving.serving import ServingProcess

    judge = new_id(Kind.ENDPOINT)
    spec = load_spec_for(entry=worker.catalog.raw("builtin/tiny-qwen3"), artifacts=worker.artifacts,
                         served_model_name=judge)
    server = ServingProcess(spec, tmp_path).start().wait_ready(timeout_s=120)
    try:
        # Created STARTING: the evaluation waits for it, and scores once it is READY.
        worker.store.create({"id": judge, "kind": "endpoint", "workload": "endpoints", "phase": "STARTING",
                             "address": None, "servedModel": judge, "adapterName": None})
        evaluation_id, claim = granted(judge=judge)
        ready = threading.Timer(1.0, lambda: worker.store.update(
            judge, lambda d: {**d, "phase": "READY", "address": server.base_url}))
        ready.start()
        assert execute(worker, "evaluation", evaluation_id, claim["id"]) == "SUCCEEDED"
        ready.join()
    finally:
        server.terminate()
    doc = worker.store.get(evaluation_id)
    [row] = [json.loads(line) for line in worker.artifacts.path(doc["results"]["path"]).read_text().splitlines()]
    assert isinstance(row["judgeAnswer"], str)  # the judge answered (a request error would leave None)
    assert doc["metrics"]["judgeUnparsable"] == (1 if row["judge"] is None else 0)
    assert doc["metrics"]["judge"] == row["judge"]
    warns = [e["message"] for e in worker.store.events(evaluation_id) if e["level"] == "warn"]
    assert warns == ([f"judge endpoint {judge} answered 1 row(s) with no score; those rows have no judge score"]
                     if row["judge"] is None else [])


HOSTILE_PATTERN = "(.*.*)*Z"  # issue 26: Python's re backtracks exponentially on it, holding the GIL


def test_a_pattern_that_backtracks_for_ever_in_python_is_scored(worker, granted):
    evaluation_id, claim = granted(rewards=[{"function": "regex", "pattern": HOSTILE_PATTERN}], maxTokens=48)
    assert execute(worker, "evaluation", evaluation_id, claim["id"]) == "SUCCEEDED"
    doc = worker.store.get(evaluation_id)
    rows = [json.loads(line) for line in worker.artifacts.path(doc["results"]["path"]).read_text().splitlines()]
    print(f"completion of {len(rows[0]['completion'])} characters matched against {HOSTILE_PATTERN}")
    assert doc["metrics"]["rewards"] == {"regex": 1.0 if rows[0]["completion"].strip().endswith("Z") else 0.0}


def test_a_registered_reward_past_its_budget_fails_it_naming_the_row(worker, granted, monkeypatch):
    """The function hangs inside Python's re (holding its process's interpreter lock); it runs in a
    process of its own, which is stopped when the call's budget is spent."""
    from dataclasses import replace

    from shared import reasons

    reference = "tests.shared.test_reward_process:catastrophic_reward"
    worker.config = replace(worker.config, reward_functions={"stuck": reference})
    monkeypatch.setenv("TRAINING_REWARD_CALL_BUDGET_S", "2")
    evaluation_id, claim = granted(rewards=[{"function": "stuck"}])
    assert execute(worker, "evaluation", evaluation_id, claim["id"]) == "FAILED"
    assert worker.store.get(evaluation_id)["detail"] == "evaluation failed: " + \
        reasons.reward_call_overran("row 0", "stuck", reference, 2.0)
    assert worker.claims().get(claim["id"])["state"] == "RELEASED"
    assert not worker.redis.exists(worker.keys.lease(evaluation_id))
