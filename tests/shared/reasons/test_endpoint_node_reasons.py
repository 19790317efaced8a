"""The sentences of a node without an endpoint manager and of the serving log, word for word
(shared/reasons/). Where they appear: tests/scheduler/test_lost_endpoints.py,
tests/e2e/test_endpoint_manager_lost.py, tests/api/test_endpoint_logs.py."""

from shared import reasons


def test_node_without_a_manager():
    assert reasons.endpoint_manager_lost("gpu-3") == (
        "no endpoint manager runs on node gpu-3; its serving process is presumed lost until one is back")
    assert reasons.endpoint_start_timed_out_without_manager(600, "gpu-3") == (
        "did not become ready within 600s: no endpoint manager ran on node gpu-3")
    assert reasons.endpoint_start_timed_out_without_manager(30.0, "local") == (
        "did not become ready within 30s: no endpoint manager ran on node local")


def test_serving_log_missing():
    assert reasons.endpoint_log_missing("ep-1", "QUEUED") == (
        "endpoint ep-1 has no serving log (QUEUED); its log starts with its serving process")
