"""The dashboard's files (services/api/views/dashboard.py): served under /ui without a token, with
a policy that lets them reach this address only, and every file shipped as package data. What the
pages do is tested in a real browser (tests/ui/)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from services.api.views.dashboard import ROOT

REPO = Path(__file__).resolve().parents[2]
FILES = sorted(p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*") if p.is_file())


def test_the_page_and_its_files_load_without_a_token(client):
    for path in ("/ui", "/ui/"):
        page = client.get(path)
        assert page.status_code == 200 and page.mimetype == "text/html", path
        assert b'<script type="module" src="/ui/js/app.js">' in page.data
        assert "default-src 'self'" in page.headers["Content-Security-Policy"]
    for name in FILES:
        resp = client.get(f"/ui/{name}")
        assert resp.status_code == 200, name
        kind = {"js": "text/javascript", "css": "text/css", "html": "text/html",
                "LICENSE": "application/octet-stream"}[name.rsplit(".", 1)[-1].rsplit("/", 1)[-1]]
        assert resp.mimetype in (kind, "application/javascript"), (name, resp.mimetype)


def test_the_api_behind_it_still_needs_the_token(client):
    resp = client.get("/v1/runs")
    assert resp.status_code == 401 and resp.json["error"]["code"] == "unauthenticated"
    # a path that only starts like the dashboard's is no part of it
    assert client.get("/uix").status_code == 401


def test_a_file_it_does_not_have_is_a_404_in_the_error_shape(client):
    for path in ("/ui/nothing.js", "/ui/../app.py", "/ui/%2e%2e/app.py", "/ui/js/../../views/dashboard.py"):
        resp = client.get(path)
        assert resp.status_code == 404, path
        assert resp.json["error"]["code"] == "not_found", path


def test_the_pages_fetch_nothing_from_elsewhere():
    """No CDN, no font or script from the internet: every address the files name is this API's."""
    for name in FILES:
        # SVG's namespace is a name, never fetched
        text = (ROOT / name).read_text().replace('"http://www.w3.org/2000/svg"', "")
        if name.startswith("vendor/"):  # a vendored library's addresses are in its comments (where it came from)
            code = [line for line in text.splitlines() if not line.strip().startswith(("//", "*"))]
            assert not re.search(r"https?://", "\n".join(code)), f"{name} names an address elsewhere"
            assert not re.search(r"\bfetch\(|XMLHttpRequest|\bimport\(", text), f"{name} could fetch something"
            continue
        assert not re.search(r"https?://", text), f"{name} names an address elsewhere"
        for imported in re.findall(r"""^import\s[^;]*?\sfrom\s+["']([^"']+)["']""", text, re.M):
            assert imported.startswith("."), f"{name} imports {imported}"
            assert (ROOT / name).parent.joinpath(imported).resolve().is_file(), f"{name} imports {imported}, missing"


def test_every_file_is_package_data():
    """A non-editable install ships the dashboard: the package-data patterns (globbed as setuptools
    globs them, `*` within one folder) cover every file."""
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["services.api"]
    package = ROOT.parent
    shipped = {p.relative_to(ROOT).as_posix() for pattern in patterns for p in package.glob(pattern) if p.is_file()}
    assert FILES and shipped == set(FILES), set(FILES) - shipped


def test_the_api_address_in_a_browser_goes_to_the_dashboard(client):
    answer = client.get("/", headers={"Host": "forged.example"})  # no token needed: it is only a redirect
    assert answer.status_code == 302 and answer.headers["Location"] == "/ui/"  # relative: no Host in it


def test_the_vendored_chart_library_ships_with_its_licence():
    """uPlot (docs/dashboard.md "Charts"): its files as the npm registry ships them, its MIT licence beside them."""
    vendored = {name for name in FILES if name.startswith("vendor/")}
    assert vendored == {"vendor/uplot/uPlot.esm.js", "vendor/uplot/uPlot.min.css", "vendor/uplot/LICENSE"}
    assert (ROOT / "vendor/uplot/LICENSE").read_text().startswith("The MIT License (MIT)")
    assert "uPlot.js" in (ROOT / "vendor/uplot/uPlot.esm.js").read_text()[:400]
