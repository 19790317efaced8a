"""A write that met a full disk (issue 26): told apart from every other failure, because it is not
the user's fault nor the trainer's, and goes away once an operator frees space. The API answers it
with a 507 (shared/errors.DiskFull); a run whose snapshot cannot be written pauses instead of failing
(services/trainer_worker/engines/base.SnapshotDiskFull).

Python's own writes raise OSError with ENOSPC (or EDQUOT past a quota). Libraries do not all keep
the errno: safetensors raises `SafetensorError("... I/O error: No space left on device (os error
28)")`, which says it in words, and torch.save a RuntimeError that says nothing of it ("unexpected
pos 576 vs 534"): for such a writer, `no_space_left` asks the filesystem itself.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_FULL_WORDS = tuple(os.strerror(code) for code in sorted(FULL_ERRNOS))  # "No space left on device", ...
# A filesystem with less than this left has no room for any file a snapshot holds; a write that
# failed there failed for want of space, whatever its error says.
NEARLY_FULL_BYTES = 1024 * 1024


def disk_full(exc: BaseException | None) -> bool:
    """Whether `exc`, or an exception it was raised from or while handling, is a write refused for
    want of space: an OSError with ENOSPC or EDQUOT, or an error that says so in words."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in FULL_ERRNOS:
            return True
        if any(words in str(exc) for words in _FULL_WORDS):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def no_space_left(directory: Path | str) -> bool:
    """Whether the filesystem holding `directory` has (almost) no space left for this process."""
    try:
        stats = os.statvfs(directory)
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < NEARLY_FULL_BYTES
