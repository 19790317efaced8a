"""Fixtures shared by every test: a real Redis under a key prefix of the test session's own,
a deployment config pointing at it, and an artifact root in a temporary directory."""

from __future__ import annotations

import os
import secrets
import tempfile

import pytest
import redis

from shared.config.deployment import parse_config
from shared.store.keys import Keys
from tests.user_text import shown_class_names

TEST_REDIS_DB = int(os.environ.get("TRAINING_TEST_REDIS_DB", "11"))
TEST_REDIS_URL = os.environ.get("TRAINING_TEST_REDIS_URL", f"redis://127.0.0.1:6379/{TEST_REDIS_DB}")
ADMIN_TOKEN = "test-admin-token"
TEAM_TOKEN = "test-team-a-token"


def cuda_absent() -> str | None:
    """Why no test marked `requires_cuda` can run in this session (None: torch sees a CUDA GPU)."""
    import torch

    if torch.cuda.is_available():
        return None
    build = f"built for CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
    return f"needs a CUDA GPU, and torch {torch.__version__} ({build}) sees none here"


def pytest_collection_modifyitems(config, items):
    """Tests marked `requires_cuda` (pyproject.toml) skip with the reason where no CUDA GPU is seen.
    torch is imported for the question only when such a test was collected: a run of tests that
    never touch torch does not pay for it."""
    marked = [item for item in items if item.get_closest_marker("requires_cuda")]
    if not marked:
        return
    why = cuda_absent()
    if why is not None:
        for item in marked:
            item.add_marker(pytest.mark.skip(reason=why))


@pytest.fixture(scope="session")
def redis_url() -> str:
    client = redis.Redis.from_url(TEST_REDIS_URL)
    try:
        client.ping()
    except redis.ConnectionError:
        pytest.exit(f"no Redis answers at {TEST_REDIS_URL}; .ci/run starts one", returncode=2)
    return TEST_REDIS_URL


@pytest.fixture
def key_prefix(redis_url):
    """The test's own key prefix. Afterwards, before its keys are deleted, every detail and event the
    test left is looked through for a Python class name (tests/user_text.py): users are told what
    failed in words, never how the code is built (issue 28)."""
    prefix = f"test-{secrets.token_hex(4)}:"
    yield prefix
    client = redis.Redis.from_url(redis_url)
    shown = shown_class_names(client, prefix)
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    if keys:
        client.delete(*keys)
    assert shown == [], "users would read Python class names (say the error in words, shared/reasons/):\n" + \
        "\n".join(shown)


def make_config(redis_url: str, prefix: str, artifact_root, *, extra_catalog=(), **overrides):
    """The test deployment; `extra_catalog` adds catalog entries after the two every test knows."""
    raw = {
        "defaultPool": "default",
        "pools": {
            "default": {"nodes": [{"name": "local", "devices": {"kind": "cpu", "count": 2}}],
                        "quotas": {"small": 1}},
            "big": {"nodes": [{"name": "big-1", "devices": {"kind": "cpu", "count": 4}}]},
        },
        "catalog": [
            {"id": "builtin/tiny-qwen3", "builtin": "tiny-qwen3"},
            {"id": "Qwen/Qwen3-8B", "path": "/nonexistent/qwen3-8b", "parameters": 8_000_000_000,
             "precisions": ["bf16"], "gpuCounts": [1, 2, 4, 8]},
            *extra_catalog,
        ],
        "tokens": [
            {"token": ADMIN_TOKEN, "name": "admin", "admin": True},
            {"token": TEAM_TOKEN, "name": "team-a", "workloads": ["team-a", "small"]},
        ],
        "limits": {"maxUploadBytes": 200_000},
        # tests import snapshot directories they write under their tmp_path by path
        "snapshotImportRoots": [tempfile.gettempdir()],
        "modelImportRoots": [tempfile.gettempdir()],  # and models, as tests/api/test_model_import.py does
        **overrides,
    }
    env = {"TRAINING_REDIS_URL": redis_url, "TRAINING_KEY_PREFIX": prefix,
           "TRAINING_ARTIFACT_ROOT": str(artifact_root)}
    return parse_config(raw, env)


@pytest.fixture(scope="session")
def shared_artifacts(tmp_path_factory):
    """One artifact root for the session, so the tiny model is built once."""
    return tmp_path_factory.mktemp("artifacts")


@pytest.fixture
def config(redis_url, key_prefix, shared_artifacts):
    return make_config(redis_url, key_prefix, shared_artifacts)


@pytest.fixture
def keys(key_prefix):
    return Keys(key_prefix)


def mark_nodes_alive(client: redis.Redis, keys: Keys, config, *, managers: bool = True) -> None:
    """What each node's services do while they run, for tests that grant without starting them:
    the worker's heartbeat and ready keys (services/trainer_worker/heartbeat.py) and, with
    `managers`, the endpoint manager's lease (services/endpoint_manager/manager.py), without a TTL.
    Tests that run a real endpoint manager leave its lease to it (`managers=False`)."""
    for pool in config.pools.values():
        for node in pool.nodes:
            client.set(keys.node_alive(node.name), "test")
            client.set(keys.node_ready(node.name), "test")
            if managers:
                client.set(keys.endpoint_manager(node.name), "test")


def place_snapshot_files(artifact_root, path: str = "x") -> None:
    """The files of a layout-2 snapshot directory at `path` of the artifact root, with placeholder
    bytes nothing loads: for snapshot documents tests write by hand, whose files the API checks
    (shared/snapshots/files.py) before it queues work on them."""
    from pathlib import Path

    directory = Path(artifact_root) / path
    for name in ("adapter/adapter_config.json", "adapter/adapter_model.safetensors", "training_state/optimizer.pt",
                 "training_state/scheduler.pt", "training_state/trainer_state.json"):
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_bytes(b"{}" if name.endswith(".json") else b"placeholder")


@pytest.fixture(scope="session")
def hub_models(tmp_path_factory):
    """Tiny random Llama 3, Gemma 3 and Qwen2.5 models, each built on first use and filed in a hub
    cache of the session's own (tests/shared/models/tiny_architectures.py)."""
    from tests.shared.models.tiny_architectures import HubModels

    return HubModels(tmp_path_factory.mktemp("hub-models"))


@pytest.fixture
def small_disk(tmp_path):
    """A filesystem of its own, a few MB, to fill up (issue 26: a full disk): `small_disk(mb)` mounts
    a tmpfs of that size under tmp_path and returns its path; unmounted after the test. Skipped,
    saying why, where this machine does not let the tests mount one (mounting needs root)."""
    import subprocess

    mounted = []

    def mount(megabytes: int):
        path = tmp_path / f"disk-{len(mounted)}"
        path.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={megabytes}m,mode=0755", "tmpfs", str(path)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip("a full disk is tested on a small tmpfs of the test's own, and this machine does not let "
                        f"the tests mount one: {(done.stderr or done.stdout).strip()}")
        mounted.append(path)
        return path

    yield mount
    for path in mounted:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill_disk(directory, name: str = "filler"):
    """Write zeros into `directory`/`name` until its filesystem refuses more (ENOSPC): the disk is
    then truly full. Returns the file; deleting it gives the space back."""
    import errno

    path = directory / name
    block = b"\0" * (256 * 1024)
    with open(path, "wb", buffering=0) as f:
        while True:
            try:
                f.write(block)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
                break
    while True:  # what a whole block could not fill, a smaller write can
        try:
            with open(path, "ab", buffering=0) as f:
                f.write(b"\0" * 512)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
            return path
