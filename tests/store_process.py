"""A Redis of a test's own that the test can kill and start again: the store-fault tests
(tests/e2e/test_store_restart.py) kill it with SIGKILL under load and restart it on the same port
and data directory, as a crashed Redis under docker compose's `restart: unless-stopped` or the
local stack's supervisor comes back.

It runs as compose runs Redis (AOF on, `appendfsync everysec`, no RDB snapshots), on a free port of
127.0.0.1, without a password (nothing else can reach a loopback port of a test for long enough
to matter, and the password path is tests/cli/test_redis_server.py's)."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import redis

from shared.redis_server import free_port, redis_executable

START_TIMEOUT_S = 15.0


class StoreProcess:
    def __init__(self, directory: Path, *, port: int | None = None, appendfsync: str = "everysec"):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.appendfsync = appendfsync
        self.process: subprocess.Popen | None = None
        self.log = self.directory / "redis.log"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> float:
        """Start it (again: same port, same AOF) and wait until it answers PING, its AOF loaded.
        Returns the seconds that took."""
        started = time.monotonic()
        command = [redis_executable(), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory),
                   "--appendonly", "yes", "--appendfsync", self.appendfsync, "--save", "", "--daemonize", "no"]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.5, socket_timeout=0.5)
        try:
            while time.monotonic() - started < START_TIMEOUT_S:
                assert self.process.poll() is None, f"redis-server exited: {self.log.read_text()[-2000:]}"
                try:
                    if client.ping():
                        return time.monotonic() - started
                except redis.BusyLoadingError:
                    pass  # up, still reading its AOF
                except (redis.ConnectionError, redis.TimeoutError):
                    pass
                time.sleep(0.02)
        finally:
            client.close()
        raise AssertionError(f"redis-server did not answer on port {self.port} within {START_TIMEOUT_S:g}s")

    def kill(self) -> None:
        """SIGKILL: no shutdown, no final fsync, as a crash or the OOM killer ends it."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
