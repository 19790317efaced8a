"""The local stack's state dir, $TRAINING_HOME/stack/: one pid record per service, logs, the admin
token and where the API listens. Records let `training down` stop exactly what `up` started, and
`training status` show what runs; the supervisor (training_cli/supervisor.py) writes the records of
the services it starts, with how often it restarted each and how each last ended."""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.config.deployment import training_home
from shared.process.private_files import make_private, private_dirs

# Stop order: the supervisor (so that it restarts nothing), whatever depends on others, Redis last.
STOP_ORDER = ("supervisor", "worker", "endpoint-manager", "scheduler", "api", "redis")
SUPERVISOR = "supervisor"


@dataclass(frozen=True)
class ServiceRecord:
    name: str  # "supervisor", "api", "scheduler", "worker-local", "endpoint-manager-local", "redis"
    pid: int  # also its process group: every service starts in a session of its own
    command: list[str]
    started_at: float
    restarts: int = 0  # how often the supervisor started it again
    last_exit: int | None = None  # the return code it last ended with (negative: killed by that signal)
    held: bool = False  # stopped by `training stop NAME`: the supervisor leaves it stopped

    def alive(self) -> bool:
        return process_alive(self.pid, self.command)


def process_alive(pid: int, command: list[str] | None = None) -> bool:
    try:
        # Reap it if it is our own exited child (foreground `up`), so it does not linger as a zombie.
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # someone else's process: the pid was reused, not ours
    cmdline = Path(f"/proc/{pid}/cmdline")
    if command and cmdline.exists():
        # Guard against pid reuse: the process must still run what we started.
        try:
            running = cmdline.read_bytes().split(b"\0")
        except OSError:
            return False
        marker = command[2] if len(command) > 2 and command[1] == "-m" else os.path.basename(command[0])
        return any(marker.encode() in part for part in running)
    return True


class StackState:
    def __init__(self, root: Path | None = None):
        self.root = root or training_home() / "stack"
        self.pids = self.root / "pids"
        self.logs = self.root / "logs"
        self.redis_dir = self.root / "redis"
        self.holds = self.root / "held"  # one empty file per service `training stop` holds stopped

    def prepare(self) -> None:
        """The state folders, 0700; what an older version left in them (logs, Redis's AOF) tightened
        to this user's only (shared/process/private_files.py)."""
        private_dirs(self.root.parent)  # TRAINING_HOME: cli.yaml, the artifacts
        for folder in (self.root, self.pids, self.logs):
            private_dirs(folder)
        make_private(self.root)

    def log_path(self, name: str) -> Path:
        return self.logs / f"{name}.log"

    # -- pid records --------------------------------------------------------------------------
    # -- services held stopped (`training stop NAME` / `training start NAME`) ---------------------
    def hold(self, name: str) -> None:
        """Ask the supervisor to stop `name` and leave it stopped."""
        private_dirs(self.holds)
        _write_private(self.holds / name, "")

    def release(self, name: str) -> None:
        """Ask the supervisor to start `name` again."""
        (self.holds / name).unlink(missing_ok=True)

    def held(self) -> set[str]:
        return {p.name for p in self.holds.iterdir()} if self.holds.exists() else set()

    def release_all(self) -> None:
        for name in self.held():
            self.release(name)

    def record(self, name: str, pid: int, command: list[str], *, restarts: int = 0,
               last_exit: int | None = None) -> ServiceRecord:
        rec = ServiceRecord(name, pid, command, time.time(), restarts, last_exit)
        self._write(rec)
        return rec

    def update_record(self, name: str, **fields) -> None:
        """Change fields of a record (the supervisor notes an exit before the restart)."""
        rec = next((r for r in self.records() if r.name == name), None)
        if rec is not None:
            self._write(ServiceRecord(**{**rec.__dict__, **fields}))

    def _write(self, rec: ServiceRecord) -> None:
        self.pids.mkdir(parents=True, exist_ok=True)
        temporary = self.pids / f".{rec.name}.json.tmp"  # readers never see half a record
        temporary.write_text(json.dumps({"name": rec.name, "pid": rec.pid, "command": rec.command,
                                         "startedAt": rec.started_at, "restarts": rec.restarts,
                                         "lastExit": rec.last_exit, "held": rec.held}))
        temporary.replace(self.pids / f"{rec.name}.json")

    def records(self) -> list[ServiceRecord]:
        found = []
        for path in sorted(self.pids.glob("*.json")) if self.pids.exists() else []:
            try:
                raw = json.loads(path.read_text())
                found.append(ServiceRecord(raw["name"], int(raw["pid"]), list(raw["command"]), raw["startedAt"],
                                           int(raw.get("restarts", 0)), raw.get("lastExit"), bool(raw.get("held"))))
            except (OSError, ValueError, KeyError):
                path.unlink(missing_ok=True)  # unreadable: nothing we can safely stop
        return sorted(found, key=lambda r: stop_rank(r.name))

    def forget(self, name: str) -> None:
        (self.pids / f"{name}.json").unlink(missing_ok=True)

    def forget_dead(self) -> None:
        for rec in self.records():
            if not rec.alive():
                self.forget(rec.name)

    # -- admin token and address --------------------------------------------------------------
    def admin_token(self) -> str:
        """Generated once, kept (0600) so a restarted stack accepts the same token."""
        return self._secret("admin_token", "adm-")

    def redis_password(self) -> str:
        """The password of the Redis this stack starts, beside the admin token (0600), kept so a
        restarted stack opens the same data."""
        return self._secret("redis_password", "")

    @property
    def redis_password_path(self) -> Path:
        return self.root / "redis_password"

    def _secret(self, name: str, prefix: str) -> str:
        path = self.root / name
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        value = prefix + secrets.token_urlsafe(32)
        _write_private(path, value + "\n")
        return value

    def save_info(self, info: dict[str, Any]) -> None:
        # It holds the Redis URL, password included: readable by this user only.
        _write_private(self.root / "stack.json", json.dumps(info, indent=2))

    def info(self) -> dict[str, Any]:
        try:
            return json.loads((self.root / "stack.json").read_text())
        except (OSError, ValueError):
            return {}


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.chmod(path, 0o600)  # an older file keeps its mode through O_TRUNC


def stop_rank(name: str) -> int:
    for rank, prefix in enumerate(STOP_ORDER):
        if name.startswith(prefix):
            return rank
    return len(STOP_ORDER)


def tail(path: Path, lines: int = 20) -> list[str]:
    try:
        return path.read_text(errors="replace").rstrip().splitlines()[-lines:]
    except OSError:
        return []
