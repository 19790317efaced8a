"""The one writer of each status (shared/lifecycle/): every edge checked against the state machine,
start and end stamped, stale writers refused; an endpoint's phase derived from its facts. Against a
real Redis (the store's atomic update is part of what makes a writer "one")."""

from __future__ import annotations

import itertools

import pytest

from shared.lifecycle import endpoints as endpoint_lifecycle
from shared.lifecycle.core import StaleWriter
from shared.lifecycle.evaluations import EVALUATIONS
from shared.lifecycle.runs import RUNS
from shared.store.ids import Kind, new_id
from shared.store.keys import Keys
from shared.lifecycle.states import (
    EndpointPhase,
    EvaluationStatus,
    IllegalTransition,
    RunStatus,
    endpoint_edges,
    evaluation_edges,
    run_edges,
)
from shared.store.documents import Store, connect


@pytest.fixture
def store(redis_url, key_prefix):
    return Store(connect(redis_url), Keys(key_prefix))


def stored_run(store, status=RunStatus.QUEUED, **fields):
    return store.create({"id": new_id(Kind.RUN), "kind": "run", **RUNS.created(), "status": status.value,
                         "scheduling": {"claim": "clm-1"}, **fields})["id"]


@pytest.mark.parametrize("lifecycle, edges", [(RUNS, run_edges()), (EVALUATIONS, evaluation_edges())])
def test_apply_takes_exactly_the_state_machines_edges(lifecycle, edges):
    for current, target in itertools.product(lifecycle.states, repeat=2):
        doc = {lifecycle.field: current.value}
        if target in edges[current]:
            assert lifecycle.apply(doc, target)[lifecycle.field] == target.value
        else:
            with pytest.raises(IllegalTransition):
                lifecycle.apply(doc, target)
            assert doc[lifecycle.field] == current.value  # nothing changed


def test_apply_stamps_the_first_start_and_the_end_but_not_a_pause():
    doc = RUNS.apply({"status": "STARTING"}, RunStatus.RUNNING)
    started = doc["startedAt"]
    assert started and "finishedAt" not in doc
    doc = RUNS.apply(RUNS.apply(doc, RunStatus.PAUSED), RunStatus.QUEUED)
    assert "finishedAt" not in doc
    doc = RUNS.apply(RUNS.apply(doc, RunStatus.STARTING), RunStatus.RUNNING)
    assert doc["startedAt"] == started  # a resumed run keeps when it first started
    doc = RUNS.apply(doc, RunStatus.SUCCEEDED, detail=None)
    assert doc["finishedAt"] and doc["detail"] is None
    evaluation = EVALUATIONS.apply({"status": "QUEUED"}, EvaluationStatus.CANCELLED, detail="x")
    assert evaluation["finishedAt"] and evaluation["detail"] == "x"


def test_move_writes_only_while_the_document_is_as_the_writer_saw_it(store):
    run_id = stored_run(store)
    assert RUNS.move(store, run_id, RunStatus.STARTING, expect={RunStatus.RUNNING}) is None
    assert RUNS.move(store, run_id, RunStatus.STARTING, claim="clm-other") is None
    assert store.get(run_id)["status"] == "QUEUED"
    moved = RUNS.move(store, run_id, RunStatus.STARTING, expect={RunStatus.QUEUED}, claim="clm-1",
                      change=lambda doc: {**doc, "scheduling": {**doc["scheduling"], "node": "local"}})
    assert moved["status"] == "STARTING" and moved["scheduling"]["node"] == "local"
    assert store.get(run_id) == moved
    assert RUNS.move(store, run_id, lambda doc: None) is None  # a target function may decline
    assert RUNS.move(store, "run-gone", RunStatus.CANCELLED) is None


def test_a_stale_fence_is_refused_and_writes_nothing(store):
    run_id = stored_run(store, RunStatus.STARTING, fence=7)
    with pytest.raises(StaleWriter, match="fence 7"):
        RUNS.move(store, run_id, RunStatus.RUNNING, fence=6)
    assert store.get(run_id)["status"] == "STARTING"
    assert RUNS.move(store, run_id, RunStatus.RUNNING, fence=7)["status"] == "RUNNING"


def test_an_illegal_edge_writes_nothing(store):
    run_id = stored_run(store, RunStatus.SUCCEEDED)
    with pytest.raises(IllegalTransition):
        RUNS.move(store, run_id, RunStatus.RUNNING)
    assert store.get(run_id)["status"] == "SUCCEEDED"


# --- endpoints: the phase follows from the facts

def endpoint(**facts):
    return {**endpoint_lifecycle.created(), **facts}


@pytest.mark.parametrize("facts, phase", [
    ({}, EndpointPhase.QUEUED),
    ({"startingSince": "2026-01-01T00:00:00.000Z"}, EndpointPhase.STARTING),
    ({"startingSince": "t", "address": "http://h:1"}, EndpointPhase.READY),
    ({"startingSince": "t", "address": None, "phase": "READY"}, EndpointPhase.STARTING),  # lost its process
    ({"stoppedAt": "t"}, EndpointPhase.TERMINATED),
    ({"stoppedAt": "t", "failed": True}, EndpointPhase.FAILED),
    ({"stoppedAt": "t", "failed": True, "address": "http://h:1"}, EndpointPhase.FAILED),
    ({"phase": "TERMINATED", "address": "http://h:1"}, EndpointPhase.TERMINATED),  # terminal is final
    ({"phase": "FAILED"}, EndpointPhase.FAILED),  # stored before `failed` was a fact
    ({"phase": "READY", "requeuedAt": "t"}, EndpointPhase.QUEUED),  # moved off a node without a manager
    ({"phase": "QUEUED", "requeuedAt": "t", "startingSince": "t2"}, EndpointPhase.STARTING),  # granted again
])
def test_an_endpoints_phase_is_derived_from_its_facts(facts, phase):
    assert endpoint_lifecycle.derive_phase(endpoint(**facts)) == phase


def test_every_phase_the_facts_can_reach_is_an_edge_of_the_state_machine():
    """Recording any one kind of fact on an endpoint in any phase either moves it along an edge of
    the state machine or is refused (IllegalTransition): never another edge."""
    facts = {"restarting": endpoint_lifecycle.restarting(), "ready": {"address": "http://h:1"},
             "stopped": endpoint_lifecycle.ended(detail="stopped by the user", failed=False),
             "failed": endpoint_lifecycle.ended(detail="did not become ready", failed=True),
             "requeued": endpoint_lifecycle.requeued({"scheduling": {}}, node="n", claim_id="c")}
    edges = endpoint_edges()
    for phase, (name, recorded) in itertools.product(EndpointPhase, facts.items()):
        doc = endpoint(phase=phase.value, startingSince="t" if phase != EndpointPhase.QUEUED else None,
                       address="http://h:1" if phase == EndpointPhase.READY else None)
        try:
            after = EndpointPhase(endpoint_lifecycle.recorded(dict(doc), **recorded)["phase"])
        except IllegalTransition:
            assert endpoint_lifecycle.derive_phase({**doc, **recorded}) not in edges[phase], (phase, name)
            continue
        assert after == phase or after in edges[phase], (phase, name, after)


def test_an_endpoint_is_never_ready_before_it_was_granted():
    with pytest.raises(IllegalTransition):
        endpoint_lifecycle.recorded(endpoint(), address="http://h:1")


def test_record_writes_only_in_the_phase_the_decision_was_made_on(store):
    endpoint_id = store.create({"id": new_id(Kind.ENDPOINT), "kind": "endpoint", **endpoint_lifecycle.created(),
                                "scheduling": {"claim": "clm-1"}})["id"]
    started = endpoint_lifecycle.record(store, endpoint_id, expect={EndpointPhase.QUEUED},
                                        **endpoint_lifecycle.restarting())
    assert started["phase"] == "STARTING" and started["startingSince"]
    assert endpoint_lifecycle.record(store, endpoint_id, expect={EndpointPhase.QUEUED}, address="http://h:1") is None
    assert endpoint_lifecycle.record(store, endpoint_id, claim="clm-2", address="http://h:1") is None
    doc = store.get(endpoint_id)
    ready = endpoint_lifecycle.record(store, endpoint_id, expect={EndpointPhase.STARTING},
                                      **endpoint_lifecycle.ready(doc, "http://h:1"))
    assert ready["phase"] == "READY" and ready["readyAt"]
    again = endpoint_lifecycle.record(store, endpoint_id, **endpoint_lifecycle.restarting())
    assert again["phase"] == "STARTING" and again["address"] is None and again["readyAt"] == ready["readyAt"]
    ended = endpoint_lifecycle.record(store, endpoint_id, **endpoint_lifecycle.ended(detail="x", failed=True))
    assert ended["phase"] == "FAILED" and ended["detail"] == "x" and ended["stoppedAt"]
    assert endpoint_lifecycle.record(store, "ep-gone", address=None) is None


def test_a_process_a_request_found_gone_sends_a_ready_endpoint_back_to_starting_once(store):
    """The API's proxy records a serving process that refused or reset a request's connection
    (endpoint_lifecycle.process_gone): READY -> STARTING with no address, its start timeout from
    now, and `processLost` naming the process; only while it is still READY with that process,
    under its claim, and not being stopped."""
    process = {"pid": 41, "startedAt": "2026-01-01T00:00:00.000Z"}

    def ready_endpoint(**fields):
        doc = store.create({"id": new_id(Kind.ENDPOINT), "kind": "endpoint", **endpoint_lifecycle.created(),
                            "scheduling": {"claim": "clm-1"}, "phase": "STARTING",
                            "startingSince": "2026-01-01T00:00:00.000Z"})
        return endpoint_lifecycle.record(store, doc["id"], **endpoint_lifecycle.ready(doc, "http://h:1"),
                                         process=process, **fields)

    seen = ready_endpoint()
    marked = endpoint_lifecycle.process_gone(store, seen)
    assert marked["phase"] == "STARTING" and marked["address"] is None
    assert marked["startingSince"] > seen["startingSince"] and marked["readyAt"] == seen["readyAt"]
    assert marked["processLost"]["pid"] == 41 and endpoint_lifecycle.process_lost(marked)
    assert endpoint_lifecycle.process_gone(store, seen) is None  # a second request: already STARTING
    again = endpoint_lifecycle.record(store, seen["id"], **endpoint_lifecycle.ready(marked, "http://h:1"))
    assert again["phase"] == "READY" and again["processLost"] is None and not endpoint_lifecycle.process_lost(again)

    restarted = ready_endpoint()  # the manager started another process meanwhile: its write stands
    store.update(restarted["id"], lambda d: {**d, "process": {**process, "pid": 42}})
    assert endpoint_lifecycle.process_gone(store, restarted) is None
    stopping = ready_endpoint(stopRequested=True)
    assert endpoint_lifecycle.process_gone(store, stopping) is None
    other_claim = ready_endpoint()
    store.update(other_claim["id"], lambda d: {**d, "scheduling": {"claim": "clm-2"}})
    assert endpoint_lifecycle.process_gone(store, other_claim) is None
    assert [store.get(d["id"])["phase"] for d in (restarted, stopping, other_claim)] == ["READY"] * 3
