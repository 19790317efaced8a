"""What a child process of a run (a rank, the rollout server) said last before it failed: the words
of the last line of its log that reads as a Python exception (a traceback's final line), without its
class name, for the sentence the run fails with. Its whole log stays where it was written."""

from __future__ import annotations

import re
from pathlib import Path

from shared import reasons


def last_error(log: Path) -> str:
    """The words of the last exception line of `log`, at most 500 characters; "" when it has none."""
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    for line in reversed(lines):
        line = re.sub(r"^\[rank\d+\]:\s*", "", line)  # torch prefixes a rank's traceback lines
        head = line.split(":", 1)[0]
        if head.endswith(("Error", "Exception", "Failed", "Interrupt")) and " " not in head:
            return reasons.traceback_error_text(line)[:500]
    return ""
