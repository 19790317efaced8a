"""Flower as compose starts it (services/trainer_worker/flower_gate.py): a real Flower process over
the test Redis, asked for every kind of route it has with no credentials, wrong ones and the right
ones (issue 26: its Prometheus /metrics answered anyone)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from shared import reasons
from shared.process.ports import free_port

REPO = Path(__file__).resolve().parents[2]
CREDENTIALS = ("ops", "a-long-flower-password")
# One path of each kind Flower serves: its pages, its JSON API, the Prometheus metrics, the health
# check, the login page and the static files, and one it has no handler for.
PATHS = ["/", "/workers", "/tasks", "/broker", "/api/workers", "/api/tasks", "/metrics", "/healthcheck", "/login",
         "/static/css/flower.css", "/no-such-page"]


def flower_env(redis_url: str, key_prefix: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLOWER_", "TRAINING_"))}
    env.update(TRAINING_REDIS_URL=redis_url, TRAINING_KEY_PREFIX=key_prefix,
               TRAINING_ARTIFACT_ROOT=str(tmp_path / "artifacts"), PYTHONPATH=str(REPO), **extra)
    return env


@pytest.fixture
def flower(redis_url, key_prefix, tmp_path):
    port = free_port()
    env = flower_env(redis_url, key_prefix, tmp_path, FLOWER_BASIC_AUTH=":".join(CREDENTIALS))
    log = open(tmp_path / "flower.log", "wb")
    process = subprocess.Popen([sys.executable, "-m", "services.trainer_worker.flower_gate", f"--port={port}",
                                "--address=127.0.0.1"], env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    try:
        while True:
            assert process.poll() is None, (tmp_path / "flower.log").read_text()
            assert time.monotonic() < deadline, "Flower did not start"
            try:
                requests.get(f"{url}/healthcheck", timeout=1)
                break
            except requests.ConnectionError:
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def test_every_flower_route_needs_the_basic_auth(flower):
    with requests.Session() as http:
        http.trust_env = False
        for path in PATHS:
            for auth in (None, (CREDENTIALS[0], "wrong"), ("someone", CREDENTIALS[1])):
                resp = http.get(f"{flower}{path}", auth=auth, timeout=10)
                assert resp.status_code == 401, (path, auth, resp.status_code)
                assert resp.headers["WWW-Authenticate"] == 'Basic realm="flower"'
                assert resp.text == reasons.FLOWER_AUTH_REQUIRED
            resp = http.post(f"{flower}{path}", timeout=10)  # every method, not only GET
            assert resp.status_code == 401, (path, resp.status_code)
        metrics = http.get(f"{flower}/metrics", auth=CREDENTIALS, timeout=10)
        assert metrics.status_code == 200 and "# TYPE" in metrics.text  # Prometheus text, for who may read it
        assert http.get(f"{flower}/healthcheck", auth=CREDENTIALS, timeout=10).text == "OK"
        assert http.get(f"{flower}/api/workers", auth=CREDENTIALS, timeout=10).status_code == 200
        assert http.get(f"{flower}/static/css/flower.css", auth=CREDENTIALS, timeout=10).status_code == 200


def test_flower_without_basic_auth_refuses_to_start(redis_url, key_prefix, tmp_path):
    done = subprocess.run([sys.executable, "-m", "services.trainer_worker.flower_gate", f"--port={free_port()}",
                           "--address=127.0.0.1"], env=flower_env(redis_url, key_prefix, tmp_path), cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and reasons.FLOWER_NEEDS_BASIC_AUTH in done.stderr


def test_basic_auth_credentials_are_read_exactly():
    from services.trainer_worker.flower_gate import authorized

    assert authorized("Basic b3BzOnNla3JpdA==", ["ops:sekrit"])  # ops:sekrit
    assert authorized("basic b3BzOnNla3JpdA==", ["x:y", "ops:sekrit"])
    for header in ("", "Basic", "Basic !!!", "Bearer b3BzOnNla3JpdA==", "Basic b3BzOnNla3JpdA",
                   "Basic b3BzOnNla3JpdDE="):  # ops:sekrit1
        assert not authorized(header, ["ops:sekrit"]), header
