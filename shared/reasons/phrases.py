"""Pieces several sentences share: how long something was idle, how a process ended, what an
error says."""

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


def error_text(exc: BaseException) -> str:
    """What a user reads of an exception nobody foresaw (a library's, a bug, a registered reward
    function's): its own words, never its Python class name (tests/test_inline_sentences.py). A
    KeyError's words are only the key, so it says which key was missing."""
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        return f"no key {exc.args[0]!r} where one was looked up"
    words = str(exc).strip()
    return words if words else "an error that gave no message"


def traceback_error_text(line: str) -> str:
    """The words of a traceback's last line (`torch.OutOfMemoryError: CUDA out of memory`), without
    the class name that starts it."""
    head, _, words = line.partition(":")
    return words.strip() if words.strip() else "an error that gave no message"
