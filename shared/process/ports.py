"""Free TCP ports, for the processes the stack starts on this machine (serving processes, rollout
servers, the ranks' rendezvous, a Redis of its own)."""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now at `host` (the kernel's pick; free until someone binds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]
