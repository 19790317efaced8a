"""GET /ui: the dashboard (and `/` redirects there), static files shipped in the package (services/api/dashboard/).

The files hold no data, so they load without a token; the pages ask the user for one, keep it in
the browser's session storage and call the REST API with it like any other client, so a token's
dashboard shows only its workloads' resources. Nothing is fetched from elsewhere: the policy below
lets the pages reach this address only.
"""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, redirect, send_from_directory

bp = Blueprint("dashboard", __name__)

ROOT = Path(__file__).resolve().parent.parent / "dashboard"
PREFIX = "/ui"
POLICY = ("default-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:; "
          "style-src 'self' 'unsafe-inline'; frame-ancestors 'none'")


def is_dashboard_path(path: str) -> bool:
    return path in ("/", PREFIX) or path.startswith(PREFIX + "/")


def _sent(name: str):
    # send_from_directory refuses names outside ROOT (404 through the app's one error handler)
    response = send_from_directory(ROOT, name, max_age=0)
    response.headers["Content-Security-Policy"] = POLICY
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


@bp.get("/")
def root():
    """The API's address in a browser: the dashboard."""
    return redirect(PREFIX + "/", code=302)


@bp.get(PREFIX)
@bp.get(PREFIX + "/")
def index():
    return _sent("index.html")


@bp.get(PREFIX + "/<path:name>")
def static_file(name: str):
    return _sent(name)
