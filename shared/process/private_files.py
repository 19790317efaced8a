"""Everything the trainer writes is readable by its own user only (0600 files, 0700 folders).

The store's AOF holds every serving process's key, datasets are a workload's data, a run's job file
holds the Redis URL: none of it is for the machine's other users. Two layers:

- `use_private_umask()`: every process of the stack sets umask 077 first thing (each service's
  entry point, the local stack's supervisor, `training up`), so whatever it or a library writes
  (TensorBoard events, logs, PEFT's files, Redis's AOF) and whatever its children write is private.
- explicit modes where the trainer publishes files (`ArtifactRoot.put_file`, `put_dir`): a folder
  copied in from elsewhere keeps no looser mode than `FILE_MODE` / `DIR_MODE`; `private_dirs`
  makes the folders up to a path 0700; `make_private` tightens a tree an older version left open
  (the local stack's state folder, its Redis folder).

So all services of one deployment run as one user (as compose and `training up` do); a service
under another user would not read what the others wrote.
"""

from __future__ import annotations

import os
from pathlib import Path

PRIVATE_UMASK = 0o077
FILE_MODE = 0o600
DIR_MODE = 0o700


def use_private_umask() -> int:
    """Set this process's umask to 077 (inherited by its children); returns the one it had."""
    return os.umask(PRIVATE_UMASK)


def private_dirs(path: Path | str) -> Path:
    """`path` and its missing parents made as 0700 folders (whatever the umask), and `path` itself
    tightened to 0700 if it existed."""
    path = Path(path)
    missing = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=DIR_MODE)
        except FileExistsError:  # made meanwhile by another process
            pass
        os.chmod(folder, DIR_MODE)
    if path.is_dir() and not path.is_symlink() and path.stat().st_uid == os.getuid():  # not a mount point's owner's
        os.chmod(path, DIR_MODE)
    return path


def make_private(root: Path | str) -> None:
    """`root` and everything under it: folders 0700, files 0600 (links are left alone)."""
    root = Path(root)
    if root.is_symlink() or not root.exists():
        return
    if root.is_file():
        os.chmod(root, FILE_MODE)
        return
    os.chmod(root, DIR_MODE)
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            if not os.path.islink(os.path.join(folder, name)):
                os.chmod(os.path.join(folder, name), DIR_MODE)
        for name in files:
            if not os.path.islink(os.path.join(folder, name)):
                os.chmod(os.path.join(folder, name), FILE_MODE)
