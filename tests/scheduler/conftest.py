"""The scheduler tests share the claim tests' fixtures (tests/claim_fixtures.py)."""

from tests.claim_fixtures import *  # noqa: F401,F403
from tests.claim_fixtures import CONFIG, RecordingSender  # noqa: F401
