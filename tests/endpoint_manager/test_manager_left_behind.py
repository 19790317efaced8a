"""A node's manager that comes back stops the serving processes its endpoints left behind when the
scheduler moved them to another node (issue 27, item 2; services/scheduler/lost_endpoints.py).

The left-behind process here is `sleep` in a session of its own, standing in for a serving
process: what is tested is that the manager finds it by the pid and start time recorded in
`leftBehind` and stops its group, which is all it does with one (it never probes or adopts it)."""

from __future__ import annotations

import subprocess

from services.endpoint_manager import supervisor
from shared.lifecycle import endpoints as endpoint_lifecycle
from tests.endpoint_manager.test_manager import cluster, gone  # noqa: F401  (the fixture)


def stand_in() -> subprocess.Popen:
    return subprocess.Popen(["sleep", "600"], start_new_session=True)


def test_a_returning_manager_stops_what_its_node_left_behind_and_forgets_it(cluster):
    here, elsewhere = stand_in(), stand_in()
    try:
        endpoint_id = cluster.create()
        cluster.store.update(endpoint_id, lambda d: {**d, "process": {
            "pid": here.pid, "startTicks": supervisor.start_ticks(here.pid)}})
        # The scheduler moved it off node local while no manager ran there (it is queued again).
        cluster.store.update(endpoint_id, lambda d: endpoint_lifecycle.recorded(
            d, **endpoint_lifecycle.requeued(d, node="local", claim_id="claim-elsewhere")))
        cluster.store.update(endpoint_id, lambda d: {**d, "leftBehind": [
            *d["leftBehind"], {"node": "other", "pid": elsewhere.pid, "startTicks": supervisor.start_ticks(elsewhere.pid)}]})
        assert cluster.doc(endpoint_id)["phase"] == "QUEUED"

        cluster.manager.close()
        back = cluster.new_manager()
        assert back.run_once()["reap"] == 1  # on taking the node's lease
        here.wait(timeout=10)
        assert gone(here.pid)
        assert elsewhere.poll() is None  # another node's: not this manager's to stop
        doc = cluster.doc(endpoint_id)
        assert [e["node"] for e in doc["leftBehind"]] == ["other"] and doc["phase"] == "QUEUED"
    finally:
        for process in (here, elsewhere):
            process.kill()
            process.wait()
