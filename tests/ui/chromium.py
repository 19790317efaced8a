"""A headless Chromium for the dashboard's browser tests: Debian's `chromium` package, installed
with apt-get the first time (no browser download from the internet: playwright drives this one)."""

from __future__ import annotations

import os
import shutil
import subprocess

NAMES = ("chromium", "chromium-browser")
INSTALL_TIMEOUT_S = 900


def _found() -> str | None:
    return next(filter(None, map(shutil.which, NAMES)), None)


def _apt(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(["apt-get", *args], env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)


def ensure_chromium() -> tuple[str | None, str]:
    """(the browser's path, "") when one is here or could be installed; else (None, why not)."""
    found = _found()
    if found:
        return found, ""
    if not shutil.which("apt-get"):
        return None, "no chromium on PATH and no apt-get to install Debian's chromium package"
    if os.geteuid() != 0:
        return None, "no chromium on PATH, and installing Debian's chromium package needs root (apt-get install chromium)"
    try:
        done = _apt("install", "-y", "-q", "chromium")
        if done.returncode != 0:  # a fresh machine's package lists may be empty or stale
            _apt("update", "-q")
            done = _apt("install", "-y", "-q", "chromium")
    except subprocess.TimeoutExpired:
        return None, f"apt-get install chromium took more than {INSTALL_TIMEOUT_S}s"
    found = _found()
    if found:
        return found, ""
    return None, "apt-get install chromium failed: " + (done.stderr or done.stdout).strip()[-500:]
