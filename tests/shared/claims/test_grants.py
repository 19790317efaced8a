"""The grant rules of SPEC 5, as plain Python."""

from __future__ import annotations

from shared.claims.grants import ClaimView, Grant, best_fit, free_devices, plan_grants


def w(claim_id: str, gpus: int, workload: str = "runs") -> ClaimView:
    return ClaimView(claim_id, gpus, workload)


def h(claim_id: str, node: str, devices: tuple[int, ...], workload: str = "runs") -> ClaimView:
    return ClaimView(claim_id, len(devices), workload, node, devices)


def test_grants_in_queue_order_taking_lowest_free_devices():
    grants = plan_grants({"local": 4}, [h("x", "local", (1,))], [w("a", 1), w("b", 2)], {})
    assert grants == [Grant("a", "local", (0,)), Grant("b", "local", (2, 3))]


def test_nothing_waiting_grants_nothing():
    assert plan_grants({"local": 2}, [], [], {}) == []


def test_a_claim_that_fits_no_node_holds_back_every_claim_after_it():
    held = [h("x", "local", (0, 1))]
    grants = plan_grants({"local": 4}, held, [w("big", 3), w("small", 1)], {})
    assert grants == []


def test_hold_back_stops_the_pass_even_when_the_next_claim_is_of_another_workload():
    grants = plan_grants({"n": 2}, [h("x", "n", (0,))], [w("a", 2), w("b", 1, "evaluations")], {})
    assert grants == []


def test_a_claim_over_its_workload_quota_is_passed_over():
    held = [h("ep1", "n", (0,), "endpoints")]
    waiting = [w("ep2", 2, "endpoints"), w("run", 2, "runs")]
    grants = plan_grants({"n": 4}, held, waiting, {"endpoints": 2})
    assert grants == [Grant("run", "n", (1, 2))]


def test_quota_counts_grants_of_the_same_pass():
    waiting = [w("e1", 1, "endpoints"), w("e2", 1, "endpoints"), w("e3", 1, "endpoints"), w("r", 1)]
    grants = plan_grants({"n": 8}, [], waiting, {"endpoints": 2})
    assert [g.claim_id for g in grants] == ["e1", "e2", "r"]


def test_quota_is_inclusive():
    grants = plan_grants({"n": 4}, [h("e1", "n", (0,), "endpoints")], [w("e2", 1, "endpoints")], {"endpoints": 2})
    assert grants == [Grant("e2", "n", (1,))]


def test_workloads_without_a_quota_are_unbounded():
    grants = plan_grants({"n": 4}, [], [w("a", 4, "runs")], {"endpoints": 1})
    assert grants == [Grant("a", "n", (0, 1, 2, 3))]


def test_a_claim_is_granted_on_one_node_only():
    # 2 + 2 free devices across two nodes do not make one 3-device grant.
    held = [h("x", "a", (0, 1)), h("y", "b", (0, 1))]
    assert plan_grants({"a": 4, "b": 4}, held, [w("c", 3)], {}) == []


def test_best_fit_picks_the_node_with_fewest_free_devices_that_fits():
    grants = plan_grants({"big": 8, "small": 2}, [], [w("a", 2), w("b", 2)], {})
    assert grants == [Grant("a", "small", (0, 1)), Grant("b", "big", (0, 1))]


def test_best_fit_ties_go_to_the_first_node_name():
    assert best_fit({"b": [0, 1], "a": [2, 3]}, 1) == "a"
    assert best_fit({"b": [0], "a": [0, 1]}, 1) == "b"
    assert best_fit({"a": [0]}, 2) is None


def test_devices_of_nodes_no_longer_declared_are_ignored():
    free = free_devices({"n": 2}, [h("x", "gone", (0,)), h("y", "n", (1,))])
    assert free == {"n": [0]}


def test_held_claims_on_unknown_nodes_still_count_against_the_quota():
    grants = plan_grants({"n": 4}, [h("x", "gone", (0, 1), "endpoints")], [w("e", 1, "endpoints")], {"endpoints": 2})
    assert grants == []


def test_a_claim_larger_than_every_node_is_passed_over_not_a_block_forever():
    grants = plan_grants({"n": 2}, [], [w("huge", 3), w("a", 1)], {})
    assert grants == [Grant("a", "n", (0,))]


def test_after_a_release_the_head_of_the_queue_starts_first():
    waiting = [w("big", 2), w("small", 1)]
    assert plan_grants({"n": 2}, [h("x", "n", (0,))], waiting, {}) == []
    assert plan_grants({"n": 2}, [], waiting, {}) == [Grant("big", "n", (0, 1))]


# --- reasons: every waiting claim gets the token of the rule that keeps it waiting

from datetime import UTC, datetime  # noqa: E402

from shared.claims import wait_reasons as why  # noqa: E402
from shared.claims.grants import decide  # noqa: E402
from shared.claims.waiting import explain_wait  # noqa: E402


def reasons_of(nodes, held, waiting, quotas):
    return [(d.claim.id, d.reason) for d in decide(nodes, held, waiting, quotas)]


def test_a_later_claim_of_the_same_workload_waits_behind_its_quota_blocked_one():
    held = [h("x", "n", (0,), "team")]
    waiting = [w("big", 2, "team"), w("small", 1, "team"), w("other", 1, "runs")]
    assert plan_grants({"n": 4}, held, waiting, {"team": 2}) == [Grant("other", "n", (1,))]
    assert reasons_of({"n": 4}, held, waiting, {"team": 2}) == [
        ("big", why.QUOTA), ("small", why.QUEUED_BEHIND), ("other", None)]


def test_each_waiting_claim_gets_one_reason():
    held = [h("x", "n", (0, 1))]
    waiting = [w("q", 1, "team"), w("head", 3), w("after", 1), w("huge", 9)]
    assert reasons_of({"n": 4}, held, waiting, {"team": 0}) == [
        ("q", why.QUOTA), ("head", why.WAITING_FOR_GPUS), ("after", why.QUEUED_BEHIND), ("huge", why.EXCEEDS_POOL)]


def test_the_scheduler_stops_reading_at_the_claim_that_holds_the_rest_back():
    pulled = []

    def lazy():
        for claim in [w("a", 1), w("b", 4), w("c", 1), w("d", 1)]:
            pulled.append(claim.id)
            yield claim

    assert plan_grants({"n": 4}, [h("x", "n", (0, 1))], lazy(), {}) == [Grant("a", "n", (2,))]
    assert pulled == ["a", "b"]


def doc(claim_id, gpus, *, workload="runs", kind="run", state="WAITING", node=None, devices=(), **extra):
    return {"id": claim_id, "resource": f"{kind}-{claim_id}", "kind": kind, "gpus": gpus, "workload": workload,
            "state": state, "node": node, "devices": list(devices), **extra}


def test_explain_wait_positions_reasons_and_entries():
    held = [doc("e", 1, kind="endpoint", workload="endpoints", state="GRANTED", node="n", devices=["cuda:0"],
                model="Qwen/Qwen3-8B", grantedAt="2026-01-01T00:00:00Z")]
    waiting = [doc("a", 4), doc("b", 1)]
    wait = explain_wait(waiting[1], pool="p", nodes={"n": 4}, held=held, waiting=waiting, quotas={},
                        resources={"endpoint-e": {"lastRequestAt": "2026-01-01T00:10:00Z"}},
                        now=datetime(2026, 1, 1, 0, 52, tzinfo=UTC).timestamp())
    assert wait == {
        "position": 2, "reason": why.QUEUED_BEHIND, "quota": None,
        "waitingOn": {"heldBy": [{"kind": "endpoint", "id": "endpoint-e", "gpus": 1, "model": "Qwen/Qwen3-8B",
                                  "idleSeconds": 42 * 60}],
                      "queuedAhead": [{"kind": "run", "id": "run-a", "gpus": 4}], "notAnswering": []},
    }
