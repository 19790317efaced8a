"""Several hosts on this machine, for end-to-end tests of a cluster (issue 27, item 6): one Linux
network namespace per host, each with its own loopback and one veth link into a bridge of the
test's own in the root namespace, where the test itself talks to them.

    root namespace (the test): bridge BRIDGE 10.X.Y.1/24
      ├── veth ── host "control" (10.X.Y.2): Redis, API, scheduler
      ├── veth ── host "node-a"  (10.X.Y.3): node-a's trainer worker and endpoint manager
      └── veth ── host "node-b"  (10.X.Y.4): node-b's ...

What differs from separate machines: they share this machine's filesystem (the artifact root is
then shared, as a network file system would share it), its cores and its process table (a
process of one host can see another's pid in /proc; nothing of the trainer relies on that across
hosts: leases name their node, and a node's processes are judged dead by its heartbeat). Cutting
a host's link (`cut`) is a network partition: its processes run on, unable to reach anything.

Everything made here carries a random suffix and is removed by `close` (processes first: every pid
left in the test's namespaces is one the test started). Needs root and iproute2; `available()`
says why not otherwise, for a skip.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path


def available() -> str | None:
    """None when network namespaces can be made here, else why not (a skip reason)."""
    if os.geteuid() != 0:
        return "network namespaces need root (this test runs as an ordinary user)"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    probe = f"trprobe{secrets.token_hex(3)}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"`ip netns add` failed here: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@dataclass
class Hosts:
    names: tuple[str, ...]
    suffix: str = field(default_factory=lambda: secrets.token_hex(2))
    subnet: str = field(default_factory=lambda: f"10.{200 + secrets.randbelow(50)}.{secrets.randbelow(250)}")
    processes: list[subprocess.Popen] = field(default_factory=list)
    made: list[tuple[str, ...]] = field(default_factory=list)  # what to delete, in reverse order

    @property
    def bridge(self) -> str:
        return f"trbr{self.suffix}"

    def namespace(self, host: str) -> str:
        return f"tr{self.suffix}-{host}"

    def address(self, host: str) -> str:
        return f"{self.subnet}.{2 + self.names.index(host)}"

    def _veth(self, host: str) -> str:
        return f"trv{self.suffix}{self.names.index(host)}"  # at most 15 characters

    def open(self) -> Hosts:
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            self.made.append(("link", "del", self.bridge))
            _ip("addr", "add", f"{self.subnet}.1/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            for host in self.names:
                ns, veth, peer = self.namespace(host), self._veth(host), f"{self._veth(host)}p"
                _ip("netns", "add", ns)
                self.made.append(("netns", "del", ns))
                _ip("link", "add", veth, "type", "veth", "peer", "name", peer)
                self.made.append(("link", "del", veth))
                _ip("link", "set", peer, "netns", ns)
                _ip("link", "set", veth, "master", self.bridge)
                _ip("link", "set", veth, "up")
                _ip("-n", ns, "addr", "add", f"{self.address(host)}/24", "dev", peer)
                _ip("-n", ns, "link", "set", peer, "up")
                _ip("-n", ns, "link", "set", "lo", "up")
        except Exception:
            self.close()
            raise
        return self

    def run(self, host: str, argv: list[str], *, env: dict[str, str], log: Path, cwd: Path) -> subprocess.Popen:
        """Start `argv` on `host` (in its namespace), in a session of its own, output to `log`."""
        with log.open("ab") as out:
            process = subprocess.Popen(["ip", "netns", "exec", self.namespace(host), *argv], env=env, cwd=cwd,
                                       stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
        self.processes.append(process)
        return process

    def cut(self, host: str) -> None:
        """Take `host`'s link down: a network partition (its processes run on, cut off)."""
        _ip("link", "set", self._veth(host), "down")

    def mend(self, host: str) -> None:
        _ip("link", "set", self._veth(host), "up")

    def pids(self, host: str) -> list[int]:
        found = subprocess.run(["ip", "netns", "pids", self.namespace(host)], capture_output=True, text=True)
        return [int(p) for p in found.stdout.split()]

    def close(self) -> None:
        """Stop every process of the test's hosts (SIGTERM, then SIGKILL), then remove the links,
        namespaces and bridge it made."""
        for process in self.processes:
            _signal(process.pid, signal.SIGTERM, group=True)
        for host in self.names:
            for pid in self.pids(host) if ("netns", "del", self.namespace(host)) in self.made else []:
                _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(p.poll() is None for p in self.processes):
            time.sleep(0.2)
        for process in self.processes:
            _signal(process.pid, signal.SIGKILL, group=True)
        for host in self.names:  # serving processes, pool children: whatever the namespace still holds
            for pid in self.pids(host) if ("netns", "del", self.namespace(host)) in self.made else []:
                _signal(pid, signal.SIGKILL)
        for process in self.processes:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        for args in reversed(self.made):
            subprocess.run(["ip", *args], capture_output=True)
        self.made.clear()


def _signal(pid: int, sig: signal.Signals, *, group: bool = False) -> None:
    try:
        os.killpg(pid, sig) if group else os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
