"""Claims against a real Redis: the fixtures tests/claim_fixtures.py holds (the scheduler's tests use them too)."""

from tests.claim_fixtures import *  # noqa: F401,F403
