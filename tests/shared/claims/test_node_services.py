"""Each kind of claim is granted only where its service answers (issue 27, item 2): runs and
evaluations on nodes whose trainer worker beats its heartbeat, endpoints on nodes whose endpoint
manager holds its lease; a claim no live node could hold is passed over, saying so."""

from __future__ import annotations

from shared.claims import wait_reasons as why
from shared.claims.grants import ClaimView, Grant, NodeState, decide, plan_grants
from shared.claims.nodes import NodeLiveness, node_liveness, node_states

WORKER_ONLY = frozenset({"run", "evaluation"})
MANAGER_ONLY = frozenset({"endpoint"})


def w(claim_id: str, gpus: int, kind: str = "run") -> ClaimView:
    return ClaimView(claim_id, gpus, "endpoints" if kind == "endpoint" else "runs", kind=kind)


def test_an_endpoint_goes_only_to_a_node_with_a_manager_and_a_run_only_to_one_with_a_worker():
    nodes = {"node-a": NodeState(1, WORKER_ONLY), "node-b": NodeState(1, MANAGER_ONLY)}
    grants = plan_grants(nodes, [], [w("ep", 1, "endpoint"), w("run", 1)], {})
    assert grants == [Grant("ep", "node-b", (0,)), Grant("run", "node-a", (0,))]


def test_a_claim_no_live_node_could_hold_is_passed_over_and_blocks_nothing():
    nodes = {"node-a": NodeState(1, WORKER_ONLY), "node-b": NodeState(1, WORKER_ONLY)}
    waiting = [w("ep", 1, "endpoint"), w("run", 1)]
    assert plan_grants(nodes, [], waiting, {}) == [Grant("run", "node-a", (0,))]
    assert [(d.claim.id, d.reason) for d in decide(nodes, [], waiting, {})] == [
        ("ep", why.NO_LIVE_WORKER), ("run", None)]


def test_a_claim_a_live_node_could_hold_later_still_holds_the_pool_back():
    held = [ClaimView("x", 1, "runs", "node-b", (0,))]
    nodes = {"node-a": NodeState(1, frozenset()), "node-b": NodeState(1)}  # node-a: nothing answers
    waiting = [w("head", 1), w("after", 1, "evaluation")]
    assert [(d.claim.id, d.reason) for d in decide(nodes, held, waiting, {})] == [
        ("head", why.WAITING_FOR_GPUS), ("after", why.QUEUED_BEHIND)]


def test_liveness_is_read_from_each_services_key(redis_client, keys, config):
    pool = config.pool("gpu")
    for node in ("big", "small"):
        for key in (keys.node_alive(node), keys.node_ready(node), keys.endpoint_manager(node)):
            redis_client.delete(key)
    redis_client.set(keys.node_alive("big"), "w")
    redis_client.set(keys.endpoint_manager("small"), "m")
    liveness = node_liveness(redis_client, keys, pool)
    assert liveness == {"big": NodeLiveness(True, False, False), "small": NodeLiveness(False, False, True)}
    states = node_states(pool, liveness)
    assert states["big"].takes == WORKER_ONLY and not states["big"].prefers("run")  # alive, not ready yet
    assert states["small"].takes == MANAGER_ONLY and states["small"].prefers("endpoint")


def test_grant_pass_places_each_kind_where_its_service_answers(queue, config, redis_client, keys, store):
    for key in (keys.endpoint_manager("big"), keys.node_alive("small"), keys.node_ready("small")):
        redis_client.delete(key)  # big: a worker only; small: an endpoint manager only
    ep = queue.submit(kind="endpoint", resource_id="ep-1", pool="gpu", gpus=1, workload="endpoints")
    run = queue.submit(kind="run", resource_id="run-1", pool="gpu", gpus=1, workload="runs")
    granted = {c["id"]: c["node"] for c in queue.grant_pass(config, "gpu")}
    assert granted == {ep["id"]: "small", run["id"]: "big"}


def test_a_node_whose_worker_is_ready_comes_before_one_still_starting():
    """Issue 27, item 3: node-a's worker was restarted and still imports its training stack;
    node-b's takes tasks. Ties by name would pick node-a; readiness picks node-b."""
    nodes = {"node-a": NodeState(1, ready=frozenset({"endpoint"})), "node-b": NodeState(1)}
    assert plan_grants(nodes, [], [w("run", 1)], {}) == [Grant("run", "node-b", (0,))]
    # ... and before best fit: node-b has more free devices, yet it can start the run at once
    nodes = {"node-a": NodeState(1, ready=frozenset()), "node-b": NodeState(4)}
    assert plan_grants(nodes, [], [w("run", 1)], {}) == [Grant("run", "node-b", (0,))]
    # with only the starting node free, the run goes there rather than wait
    held = [ClaimView("x", 1, "runs", "node-b", (0,))]
    nodes = {"node-a": NodeState(1, ready=frozenset()), "node-b": NodeState(1)}
    assert plan_grants(nodes, held, [w("run", 1)], {}) == [Grant("run", "node-a", (0,))]
