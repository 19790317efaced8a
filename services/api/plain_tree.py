"""What an admin names on the API's machine (snapshot import, base-model import): a path confined to
the import roots (`real_under_roots`), and a directory copied as plain files and directories only
(`copy_plain_tree`: any link, device or fifo is refused, and each file is opened without following a
link, O_NOFOLLOW, so one swapped in while the copy runs is refused too)."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

from shared.errors import ValidationFailed


def real_under_roots(path: str, roots: list[str], *, not_plain: Callable[[], str]) -> Path | None:
    """The real path the absolute `path` names inside the first of `roots` that holds it, or None
    when none does. A root may itself be reached through a link (/data -> /mnt/data); below it,
    none may be: ValidationFailed(not_plain()), field `path`."""
    named = Path(os.path.normpath(path))
    for root in roots:
        for given in (Path(os.path.normpath(root)), Path(os.path.realpath(root))):
            if named == given or named.is_relative_to(given):
                real = Path(os.path.realpath(root)) / named.relative_to(given)
                if Path(os.path.realpath(real)) != real:
                    raise ValidationFailed(not_plain(), details={"field": "path"})
                return real
    return None


def copy_plain_tree(source: Path, target: Path, *, not_plain: Callable[[str], str],
                    admit: Callable[[str, int], None] | None = None) -> None:
    """Copy `source` into `target`. `not_plain(inside)` is the sentence refusing an entry that is
    not a plain file or directory (a 400, field `path`); `admit(inside, size)`, when given, is asked
    about each file before it is copied, and may raise to refuse it."""
    for directory, dirs, files in os.walk(source, followlinks=False):
        here = Path(directory)
        (target / here.relative_to(source)).mkdir(parents=True, exist_ok=True)
        for name in dirs:
            if os.path.islink(here / name):
                raise ValidationFailed(not_plain(str((here / name).relative_to(source))), details={"field": "path"})
        for name in files:
            entry = here / name
            try:
                fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW)
            except OSError:
                fd = None
            if fd is None or not stat.S_ISREG(os.fstat(fd).st_mode):
                if fd is not None:
                    os.close(fd)
                raise ValidationFailed(not_plain(str(entry.relative_to(source))), details={"field": "path"})
            if admit is not None:
                try:
                    admit(entry.relative_to(source).as_posix(), os.fstat(fd).st_size)
                except BaseException:
                    os.close(fd)
                    raise
            with os.fdopen(fd, "rb") as src, open(target / entry.relative_to(source), "wb") as dst:
                shutil.copyfileobj(src, dst, 1024 * 1024)
