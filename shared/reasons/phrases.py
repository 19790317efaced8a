"""Pieces several sentences share: how long something was idle, how a process ended."""

from __future__ import annotations

import signal


def idle_text(seconds: int | float) -> str:
    """`45s`, `42m`, or `1h05m`."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"


def how_it_ended(exit_code: int) -> str:
    """How a process ended, from its return code: `exited with code 3`, `was killed by SIGKILL`."""
    if exit_code < 0:
        try:
            return f"was killed by {signal.Signals(-exit_code).name}"
        except ValueError:
            return f"was killed by signal {-exit_code}"
    return f"exited with code {exit_code}"
