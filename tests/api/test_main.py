"""`python -m services.api.main` refuses to serve behind a token anyone could guess (issue 14)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from shared import reasons
from shared.config.deployment import parse_config, weak_tokens

REPO = Path(__file__).resolve().parents[2]
POOLS = {"pools": {"p": {"nodes": [{"name": "n", "devices": {"kind": "cpu", "count": 1}}]}}}


@pytest.mark.parametrize("token", ["change-me", "CHANGE-ME", "", "   ", "short-token", "admin"])
def test_the_api_will_not_start_with_a_guessable_admin_token(token, tmp_path, redis_url):
    env = {**os.environ, "TRAINING_ADMIN_TOKEN": token, "TRAINING_REDIS_URL": redis_url,
           "TRAINING_ARTIFACT_ROOT": str(tmp_path), "TRAINING_HOME": str(tmp_path)}
    env.pop("TRAINING_CONFIG", None)
    done = subprocess.run([sys.executable, "-m", "services.api.main", "--port", "1"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1  # set but empty is refused too (docker compose passes "" for an unset variable)
    assert reasons.weak_tokens_refused(["admin"], 16) in done.stderr


def test_weak_tokens_are_named_and_long_random_ones_pass():
    config = parse_config({**POOLS, "tokens": [
        {"token": "change-me", "name": "ops"}, {"token": "x" * 15, "name": "ci"},
        {"token": "a-long-random-token-of-43-characters-xxxxxxx", "name": "team"}]}, {})
    assert weak_tokens(config) == ["ops", "ci"]
    assert reasons.weak_tokens_refused(["ops"], 16) == (
        "refusing to start: the token(s) ops are empty, a placeholder such as change-me, or shorter than 16 "
        "characters; set TRAINING_ADMIN_TOKEN (and the config's tokens) to long random values, e.g. "
        "`python3 -c 'import secrets; print(secrets.token_urlsafe(32))'`")
