"""The endpoint manager's decision (services/endpoint_manager/decide.py), branch by branch, as plain
Python: a stored endpoint document, a probe, a time, in; one decision out. Plus the sentences it
writes, word for word, and which runs keep a judge alive."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from services.endpoint_manager.decide import LOST_AFTER_FAILED_PROBES, Action, Decision, Probe, decide
from shared import reasons
from shared.lifecycle.endpoints import idle_expired, start_timed_out
from shared.lifecycle.states import EndpointPhase, endpoint_transition
from shared.rewards.judges import names_judge
from tests.shared.plans.plan_fixtures import typed

NOW = 1_800_000_000.0
ALIVE = Probe(alive=True, answers=True)
LOADING = Probe(alive=True, answers=False)
DEAD = Probe()


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def endpoint(phase: str, **fields) -> dict:
    return {"id": "ep-1", "phase": phase, "idleTimeout": 3600, "startTimeout": 600, "stopRequested": False,
            "readyAt": None, "lastRequestAt": None, "startingSince": iso(NOW - 10), **fields}


def ready(**fields) -> dict:
    return endpoint("READY", **{"readyAt": iso(NOW - 60), **fields})


# --- STARTING
def test_starting_without_a_live_process_starts_one():
    assert decide(endpoint("STARTING"), DEAD, now=NOW) == Decision(Action.START)


def test_starting_with_a_loading_process_waits():
    assert decide(endpoint("STARTING"), LOADING, now=NOW) == Decision(Action.NOTHING)


def test_starting_whose_process_answers_becomes_ready():
    assert decide(endpoint("STARTING"), ALIVE, now=NOW) == Decision(Action.READY, EndpointPhase.READY)


def test_starting_past_its_start_timeout_fails_with_the_timeout_sentence():
    doc = endpoint("STARTING", startTimeout=5, startingSince=iso(NOW - 6))
    assert decide(doc, LOADING, now=NOW) == Decision(
        Action.FAIL, EndpointPhase.FAILED, "did not become ready within 5s; see its log")
    assert decide(doc, DEAD, now=NOW).action is Action.FAIL  # no new start once the time is up


def test_answering_wins_over_a_timeout_that_just_passed():
    doc = endpoint("STARTING", startTimeout=5, startingSince=iso(NOW - 6))
    assert decide(doc, ALIVE, now=NOW).action is Action.READY


def test_starting_whose_own_process_ended_fails_with_how_it_ended():
    assert decide(endpoint("STARTING"), Probe(exit_code=1), now=NOW) == Decision(
        Action.FAIL, EndpointPhase.FAILED, "its serving process exited with code 1 before it was ready; see its log")
    assert decide(endpoint("STARTING"), Probe(exit_code=-9), now=NOW).detail == (
        "its serving process was killed by SIGKILL before it was ready; see its log")


def test_starting_without_a_recorded_start_never_times_out():
    doc = endpoint("STARTING", startingSince=None)
    assert not start_timed_out(doc, NOW)
    assert decide(doc, DEAD, now=NOW).action is Action.START


# --- STARTING after a proxied request found its process gone (shared/lifecycle/endpoints.process_gone)
def lost(**fields) -> dict:
    return endpoint("STARTING", **{"readyAt": iso(NOW - 60), "process": {"pid": 41, "startedAt": iso(NOW - 70)},
                                   "processLost": {"pid": 41, "at": iso(NOW - 1)}, **fields})


def test_a_process_a_request_found_gone_is_restarted_not_failed():
    restart = Decision(Action.RESTART, EndpointPhase.STARTING)
    assert decide(lost(), DEAD, now=NOW) == restart
    assert decide(lost(), Probe(exit_code=-9), now=NOW) == restart  # this manager's own child, killed
    assert decide(lost(), ALIVE, now=NOW) == Decision(Action.READY, EndpointPhase.READY)  # a passing reset


def test_a_process_found_gone_that_lives_on_without_answering_is_restarted_at_the_probe_limit():
    below = Probe(alive=True, answers=False, failures=LOST_AFTER_FAILED_PROBES - 1)
    at = Probe(alive=True, answers=False, failures=LOST_AFTER_FAILED_PROBES)
    assert decide(lost(), below, now=NOW).action is Action.NOTHING
    assert decide(lost(), at, now=NOW).action is Action.RESTART


def test_a_loss_of_an_earlier_process_does_not_change_how_a_new_one_starts():
    doc = lost(process={"pid": 42, "startedAt": iso(NOW - 2)})  # started after the loss was recorded
    assert decide(doc, Probe(exit_code=1), now=NOW).action is Action.FAIL
    assert decide(doc, LOADING, now=NOW).action is Action.NOTHING
    timed_out = lost(startTimeout=5, startingSince=iso(NOW - 6))
    assert decide(timed_out, DEAD, now=NOW).action is Action.FAIL  # its start timeout runs again from the loss


# --- READY
def test_ready_and_answering_is_left_alone():
    assert decide(ready(), ALIVE, now=NOW) == Decision(Action.NOTHING)


def test_ready_whose_process_is_gone_starts_again():
    assert decide(ready(), DEAD, now=NOW) == Decision(Action.RESTART, EndpointPhase.STARTING)


def test_ready_that_fails_probes_in_a_row_is_lost_only_at_the_limit():
    below = Probe(alive=True, answers=False, failures=LOST_AFTER_FAILED_PROBES - 1)
    at = Probe(alive=True, answers=False, failures=LOST_AFTER_FAILED_PROBES)
    assert decide(ready(), below, now=NOW).action is Action.NOTHING
    assert decide(ready(), at, now=NOW).action is Action.RESTART


def test_idle_past_its_timeout_stops_with_the_idle_sentence():
    doc = ready(idleTimeout=2, readyAt=iso(NOW - 3))
    assert decide(doc, ALIVE, now=NOW) == Decision(
        Action.STOP, EndpointPhase.TERMINATED, "stopped after 2s without a request")
    assert decide(doc, DEAD, now=NOW).action is Action.STOP  # no restart of what would stop anyway


def test_idle_runs_from_the_later_of_last_request_and_ready():
    doc = ready(idleTimeout=2, readyAt=iso(NOW - 30), lastRequestAt=iso(NOW - 1))
    assert not idle_expired(doc, NOW)
    assert decide(doc, ALIVE, now=NOW).action is Action.NOTHING
    assert idle_expired(doc, NOW + 1.5)


def test_idle_timeout_zero_never_stops():
    doc = ready(idleTimeout=0, readyAt=iso(NOW - 10 ** 6))
    assert not idle_expired(doc, NOW)
    assert decide(doc, ALIVE, now=NOW).action is Action.NOTHING


def test_a_judge_in_use_is_not_stopped_for_idleness():
    doc = ready(idleTimeout=2, readyAt=iso(NOW - 3))
    assert decide(doc, ALIVE, now=NOW, judge_in_use=True).action is Action.NOTHING


def test_idle_stop_reads_one_hour_as_a_human_duration():
    assert reasons.endpoint_idle_stopped(3600) == "stopped after 1h00m without a request"
    assert reasons.endpoint_idle_stopped(90) == "stopped after 1m without a request"


# --- stop requested, queued, ended
@pytest.mark.parametrize("phase", ["STARTING", "READY"])
@pytest.mark.parametrize("probe", [ALIVE, LOADING, DEAD], ids=["answers", "loading", "dead"])
def test_stop_requested_stops_whatever_the_process_does(phase, probe):
    assert decide(endpoint(phase, stopRequested=True), probe, now=NOW) == Decision(
        Action.STOP, EndpointPhase.TERMINATED, "stopped by the user")


def test_queued_waits_for_the_scheduler():
    assert decide(endpoint("QUEUED"), DEAD, now=NOW).action is Action.NOTHING


@pytest.mark.parametrize("phase", ["TERMINATED", "FAILED"])
def test_ended_endpoint_only_has_a_leftover_process_reaped(phase):
    assert decide(endpoint(phase, stopRequested=True), ALIVE, now=NOW) == Decision(Action.REAP)
    assert decide(endpoint(phase), DEAD, now=NOW) == Decision(Action.NOTHING)


def test_every_phase_change_decided_is_an_edge_of_the_state_machine():
    probes = [ALIVE, LOADING, DEAD, Probe(exit_code=1), Probe(alive=True, failures=9)]
    docs = [endpoint(p, **extra) for p in EndpointPhase for extra in (
        {}, {"stopRequested": True}, {"startTimeout": 1, "startingSince": iso(NOW - 5)},
        {"idleTimeout": 1, "readyAt": iso(NOW - 5)})]
    for doc in docs:
        for probe in probes:
            decision = decide(doc, probe, now=NOW)
            if decision.phase is not None:
                endpoint_transition(doc["phase"], decision.phase)  # raises on an illegal edge


# --- sentences, word for word
def test_manager_sentences_word_for_word():
    assert reasons.ENDPOINT_PROCESS_LOST == "serving process lost; starting it again"
    assert reasons.endpoint_ready("http://127.0.0.1:8001") == "ready at http://127.0.0.1:8001"
    assert reasons.endpoint_process_started(pid=12, port=8001, backend="builtin") == (
        "serving process started on port 8001 (pid 12, backend builtin)")
    assert reasons.endpoint_could_not_start("no such model") == "could not start its serving process: no such model"
    assert reasons.endpoint_start_timed_out(600) == "did not become ready within 600s; see its log"


# --- which runs keep a judge alive
@pytest.mark.parametrize("status, rewards, in_use", [
    ("RUNNING", [{"judge": "ep-1"}], True),
    ("QUEUED", [{"function": "exact_match"}, {"judge": "ep-1"}], True),
    ("PAUSED", [{"judge": "my-judge"}], True),  # by the endpoint's name
    ("SUCCEEDED", [{"judge": "ep-1"}], False),
    ("CANCELLED", [{"judge": "ep-1"}], False),
    ("RUNNING", [{"judge": "ep-2"}], False),
    ("RUNNING", [], False),
])
def test_uses_judge(status, rewards, in_use):
    run = {"id": "run-1", "status": status, "plan": typed({"method": "grpo", "grpo": {"rewards": rewards}}).to_dict()}
    assert names_judge(run, {"id": "ep-1", "name": "my-judge"}) is in_use


def test_an_sft_run_uses_no_judge():
    assert not names_judge({"status": "RUNNING", "plan": typed({"method": "sft", "grpo": None}).to_dict()}, {"id": "ep-1"})


def test_judges_evaluation():
    endpoint = {"id": "ep-1", "name": "my-judge"}
    assert names_judge({"status": "RUNNING", "judge": "ep-1"}, endpoint)
    assert names_judge({"status": "QUEUED", "judge": "my-judge"}, endpoint)
    assert not names_judge({"status": "SUCCEEDED", "judge": "ep-1"}, endpoint)
    assert not names_judge({"status": "RUNNING", "judge": None}, endpoint)
    assert not names_judge({"status": "RUNNING", "judge": "ep-2"}, endpoint)
