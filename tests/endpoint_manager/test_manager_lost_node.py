"""A node whose endpoint manager is gone (SPEC 6, "Outliving a restart"), with the REAL serving
process: the manager stops renewing its lease (as if killed), the scheduler's pass
(services/scheduler/lost_endpoints.py) moves the READY endpoint back to STARTING, and a manager that
comes back re-adopts the process still running; one that comes back after the endpoint failed
stops the orphaned process.

Time past the thresholds is passed to the scheduler's function as `now`, so nothing sleeps for a
minute; the lease expires for real (a manager with a 1 s lease that stops renewing it)."""

from __future__ import annotations

import time

import pytest

from services.endpoint_manager.manager import EndpointManager
from services.scheduler.lost_endpoints import recover_lost_endpoints
from tests.endpoint_manager.test_manager import cluster, gone, health  # noqa: F401  (the fixture)

pytestmark = pytest.mark.timeout(120)

PRESUMED_LOST = "no endpoint manager runs on node local; its serving process is presumed lost until one is back"


def short_lease_manager(cluster) -> EndpointManager:
    manager = EndpointManager(config=cluster.config, client=cluster.client, node="local", log=cluster.log,
                              lease_ms=1000)
    cluster.managers.append(manager)
    return manager


def manager_gone(cluster, now: float) -> list[str]:
    """The manager stopped renewing: its lease expires, then the scheduler passes until the node
    counts as without a manager (`now` is moved past the threshold instead of sleeping)."""
    key = cluster.store.keys.endpoint_manager("local")
    deadline = time.monotonic() + 5
    while cluster.client.exists(key):
        assert time.monotonic() < deadline, "the lease did not expire"
        time.sleep(0.1)
    recover = dict(queue=cluster.queue, store=cluster.store, config=cluster.config)
    assert recover_lost_endpoints(**recover, now=now) == []  # first seen missing
    return recover_lost_endpoints(**recover, now=now + cluster.config.worker_lost_after_s + 1)


def test_a_returning_manager_re_adopts_the_process_and_one_after_a_failure_stops_it(cluster):
    cluster.manager.close()
    cluster.manager = short_lease_manager(cluster)
    endpoint_id = cluster.create(startTimeout=60)
    first = cluster.ready(endpoint_id)
    pid = first["process"]["pid"]

    # The manager dies (it simply stops renewing its lease); the serving process runs on.
    assert manager_gone(cluster, time.time()) == [endpoint_id]
    lost = cluster.doc(endpoint_id)
    assert (lost["phase"], lost["address"], lost["process"]) == ("STARTING", None, first["process"])
    assert lost["scheduling"] == first["scheduling"] and cluster.claim(endpoint_id)["state"] == "GRANTED"
    assert PRESUMED_LOST in cluster.messages(endpoint_id)
    assert health(first["address"]) == 200

    # A manager comes back: the process still answers, so it is READY again without a restart.
    back = short_lease_manager(cluster)
    again = cluster.ready(endpoint_id, manager=back)
    assert (again["process"], again["address"], again["readyAt"]) == (first["process"], first["address"],
                                                                      first["readyAt"])
    assert again["managerMissingSince"] is None
    assert sum("serving process started" in m for m in cluster.messages(endpoint_id)) == 1

    # Gone again, and this time no manager returns within the start timeout: FAILED, claim released.
    t0 = time.time() + 3600
    assert manager_gone(cluster, t0) == [endpoint_id]
    failed_at = t0 + cluster.config.worker_lost_after_s + 1 + 61
    assert recover_lost_endpoints(queue=cluster.queue, store=cluster.store, config=cluster.config,
                                  now=failed_at) == [endpoint_id]
    failed = cluster.doc(endpoint_id)
    assert failed["phase"] == "FAILED"
    assert failed["detail"] == "did not become ready within 60s: no endpoint manager ran on node local"
    assert cluster.claim(endpoint_id)["state"] == "RELEASED"
    assert not gone(pid)  # nobody on the node could stop it yet

    # The next manager of the node stops the orphaned process and leaves the endpoint FAILED.
    late = short_lease_manager(cluster)
    assert late.run_once()["reap"] == 1
    assert cluster.until("the orphan stopped", lambda: gone(pid), manager=late, timeout_s=10)
    assert cluster.doc(endpoint_id)["phase"] == "FAILED"
