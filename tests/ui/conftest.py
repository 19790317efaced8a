"""Fixtures of the dashboard's browser tests: one real stack (API, scheduler, worker, endpoint
manager) with a real run, its branch and an endpoint, and one headless Chromium driven by playwright."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest

from tests.e2e.stack import start_stack, stop_stack
from tests.ui.chromium import ensure_chromium

# Set to a directory to keep a screenshot of each page there (docs/dashboard/ holds the README's).
SCREENSHOTS = os.environ.get("TRAINING_DASHBOARD_SCREENSHOTS")


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path, why = ensure_chromium()
    if path is None:
        pytest.skip(f"the dashboard's browser tests need Chromium: {why}")
    return path


@pytest.fixture(scope="module")
def browser(chromium_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the test extra: pip install -e .[test]")
    with sync_api.sync_playwright() as driver:
        # --no-sandbox: Chromium's sandbox refuses to run as root, as tests in containers do
        browser = driver.chromium.launch(executable_path=chromium_path, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def team_token() -> str:
    return secrets.token_hex(16)


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_url, team_token):
    stack = start_stack(tmp_path_factory.mktemp("ui"), redis_url, endpoint_manager=True,
                        extra_tokens=({"token": team_token, "name": "team", "workloads": ["team-a"]},))
    yield stack
    stop_stack(stack)


@pytest.fixture
def page(browser, stack):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert errors == [], f"the page threw: {errors}"


def shoot(page, name: str) -> None:
    """Keep a screenshot of the page when TRAINING_DASHBOARD_SCREENSHOTS names a directory."""
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / f"{name}.png"), full_page=False)
