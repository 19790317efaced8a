"""The sentences of SPEC 5 (what a waiting claim waits on), word for word."""

from __future__ import annotations

import pytest

from shared import reasons
from shared.claims import wait_reasons


@pytest.mark.parametrize("seconds, text", [(0, "0s"), (45, "45s"), (59, "59s"), (60, "1m"), (42 * 60 + 59, "42m"),
                                           (3599, "59m"), (3600, "1h00m"), (3900, "1h05m"), (26 * 3600, "26h00m")])
def test_idle_text(seconds, text):
    assert reasons.idle_text(seconds) == text


def test_the_spec_line_word_for_word():
    waiting = {"heldBy": [{"kind": "endpoint", "id": "ENDPOINT_ID", "gpus": 1, "model": "Qwen/Qwen3-8B",
                           "idleSeconds": 42 * 60}],
               "queuedAhead": [{"kind": "run", "id": "RUN_ID", "gpus": 4}]}
    assert reasons.waiting_on(waiting) == (
        "held by endpoint ENDPOINT_ID (Qwen/Qwen3-8B, idle 42m); queued ahead: run RUN_ID (4 GPU)")


def test_several_entries_are_joined_and_an_empty_part_is_left_out():
    waiting = {"heldBy": [{"kind": "run", "id": "A", "gpus": 2},
                          {"kind": "endpoint", "id": "B", "gpus": 1, "model": "M", "idleSeconds": 180}],
               "queuedAhead": []}
    assert reasons.waiting_on(waiting) == "held by run A (2 GPU), endpoint B (M, idle 3m)"
    assert reasons.waiting_on({"heldBy": [], "queuedAhead": [{"kind": "evaluation", "id": "E", "gpus": 1}]}) == (
        "queued ahead: evaluation E (1 GPU)")
    assert reasons.waiting_on({"heldBy": [], "queuedAhead": []}) == ""
    assert reasons.waiting_on(None) == ""


def test_entries_of_hidden_workloads_and_queued_endpoints():
    assert reasons.wait_entry({"kind": "run", "id": None, "gpus": 2}) == "run of another workload (2 GPU)"
    assert reasons.wait_entry({"kind": "endpoint", "id": "E", "gpus": 2, "model": "M", "idleSeconds": None}) == (
        "endpoint E (M, 2 GPU)")


def test_long_lists_are_cut_in_text_only():
    ahead = [{"kind": "run", "id": f"r{i}", "gpus": 1} for i in range(12)]
    text = reasons.waiting_on({"queuedAhead": ahead})
    assert text.endswith("run r9 (1 GPU), and 2 more") and text.count("run r") == 10


def test_a_quota_wait_says_so_and_names_the_quota():
    scheduling = {"reason": wait_reasons.QUOTA,
                  "quota": {"workload": "team-a", "gpus": 2, "held": 2, "pool": "default"},
                  "waitingOn": {"heldBy": [{"kind": "run", "id": "A", "gpus": 2}], "queuedAhead": []}}
    assert reasons.waiting_text(scheduling) == (
        "quota: workload team-a holds 2 of its 2 GPU(s) in pool default; held by run A (2 GPU)")
    assert reasons.quota_wait(workload="team-a", held_gpus=2, quota_gpus=2, pool="default") == (
        "quota: workload team-a holds 2 of its 2 GPU(s) in pool default")


def test_worker_lost_sentences():
    assert reasons.worker_lost_requeued("n1") == "worker lost on node n1; re-queued keeping its place"
    assert reasons.granted(gpus=2, node="n", devices=["cuda:0", "cuda:1"]) == "granted 2 GPU(s) on node n (cuda:0, cuda:1)"


def test_reason_tokens_are_stable():
    assert wait_reasons.ALL == ("waiting_for_gpus", "queued_behind", "quota", "fits_now", "exceeds_pool",
                                "no_live_worker")


def test_a_node_whose_service_is_not_answering_word_for_word():
    """Issue 27, item 4 (shared/claims/waiting.py `notAnswering`)."""
    assert reasons.node_not_answering_wait("node-a", free_gpus=1, service="worker") == (
        "node node-a has 1 free GPU but its worker is not answering")
    assert reasons.node_not_answering_wait("gpu-3", free_gpus=4, service="endpoint manager") == (
        "node gpu-3 has 4 free GPUs but its endpoint manager is not answering")
    assert reasons.node_not_answering_wait("node-a", free_gpus=0, service="worker") == (
        "node node-a's worker is not answering")
    scheduling = {"reason": "no_live_worker", "waitingOn": {"heldBy": [], "queuedAhead": [], "notAnswering": [
        {"node": "n1", "freeGpus": 2, "service": "endpoint manager"}]}}
    assert reasons.waiting_text(scheduling) == "node n1 has 2 free GPUs but its endpoint manager is not answering"
    assert reasons.waiting_text({"reason": "no_live_worker"}) == (
        "no worker is running on a node of its pool that could hold it")  # an answer from before
    assert [reasons.node_service_state(alive=False), reasons.node_service_state(alive=True, ready=False),
            reasons.node_service_state(alive=True)] == ["not answering", "alive, still starting", "alive"]


def test_dead_node_sentences_word_for_word():
    """Issue 27, item 1 (services/scheduler/lost.py) and item 2 (lost_endpoints.py)."""
    assert reasons.node_not_answering("node-a", kind="evaluation", after_s=3.0) == (
        "node node-a stopped answering (its worker's heartbeat is gone); the evaluation goes back to the queue "
        "unless it answers within 3s")
    assert reasons.node_dead_requeued("node-a") == "node node-a stopped answering; re-queued keeping its place"
    assert reasons.node_dead_cancelled("node-a") == (
        "cancelled by the user; its node node-a stopped answering before it stopped")
    assert reasons.endpoint_moved_off("node-a") == (
        "no endpoint manager runs on node node-a; back in the queue keeping its place, to start on a node that has one")
