"""Where a node's endpoints listen and the address they advertise (issue 27, item 6): from the
node's `host` in the deployment config, so the API and a grpo run on another machine reach them;
flags (or their environment variables) still win; a node without a host stays on loopback."""

from __future__ import annotations

from services.endpoint_manager.manager import EndpointManager
from shared.config.deployment import parse_config
from shared.store.documents import connect

RAW = {"pools": {"p": {"nodes": [{"name": "node-a", "host": "10.77.0.3", "devices": {"kind": "cpu", "count": 1}},
                                 {"name": "local", "devices": {"kind": "cpu", "count": 1}}]}}}


def manager(node: str, **hosts) -> EndpointManager:
    config = parse_config(RAW, env={"TRAINING_REDIS_URL": "redis://127.0.0.1:6379/12"})
    return EndpointManager(config=config, client=connect(config.redis_url), node=node, **hosts)


def test_a_node_with_a_host_serves_and_advertises_there():
    m = manager("node-a")
    assert (m.bind_host, m.advertise_host) == ("10.77.0.3", "10.77.0.3")
    assert m._address({"process": {"port": 8123}}) == "http://10.77.0.3:8123"


def test_flags_win_and_a_node_without_a_host_stays_on_loopback():
    assert (lambda m: (m.bind_host, m.advertise_host))(manager("node-a", bind_host="0.0.0.0")) == (
        "0.0.0.0", "10.77.0.3")
    assert (lambda m: (m.bind_host, m.advertise_host))(manager("node-a", advertise_host="a.example")) == (
        "10.77.0.3", "a.example")
    assert (lambda m: (m.bind_host, m.advertise_host))(manager("local")) == ("127.0.0.1", "127.0.0.1")
    assert (lambda m: (m.bind_host, m.advertise_host))(manager("local", bind_host="0.0.0.0")) == (
        "0.0.0.0", "127.0.0.1")
