"""No answer repeats the Host header a request was sent with (issue 26): whoever sends a request
chooses it, so an address built from it (a redirect's Location, GET /v1/info's apiUrl) points
wherever they like, and a cache or a link-following client takes it for the API's own. The real
application under uvicorn is asked with a forged Host over a raw connection (an HTTP client library
would tidy the path and set its own Host)."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import pytest

from services.api.openapi import ROUTES
from shared.ids import new_id
from tests.api.test_workload_walls import PATH_KINDS
from tests.conftest import ADMIN_TOKEN, make_config

PUBLIC_URL = "https://trainer.example.com"
FORGED = "attacker.example"


@pytest.fixture
def config(redis_url, key_prefix, shared_artifacts):
    return make_config(redis_url, key_prefix, shared_artifacts, publicUrl=PUBLIC_URL)


def raw_get(api_url: str, path: str, host: str = FORGED) -> tuple[int, dict[str, str], bytes]:
    parts = urlsplit(api_url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.putrequest("GET", path, skip_host=True, skip_accept_encoding=True)
        connection.putheader("Host", host)
        connection.putheader("Authorization", f"Bearer {ADMIN_TOKEN}")
        connection.endheaders()
        resp = connection.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        connection.close()


def assert_not_reflected(headers: dict[str, str], body: bytes, what: str) -> None:
    assert FORGED not in json.dumps(headers) and FORGED.encode() not in body, (what, headers, body[:300])


@pytest.mark.parametrize("path", ["/v1//runs", "/v1/runs//", "//v1//info", "/v1/runs//x", "/ui//index.html"])
def test_a_doubled_slash_is_an_unknown_route_not_a_redirect_to_the_host_sent(api_url, path):
    status, headers, body = raw_get(api_url, path)
    assert status == 404 and "location" not in headers, (path, status, headers)
    assert json.loads(body)["error"]["code"] == "not_found"
    assert_not_reflected(headers, body, path)


@pytest.mark.parametrize("path, same_as", [("//v1/runs", "/v1/runs"), ("///ui", "/ui")])
def test_leading_slashes_are_read_as_one_without_a_redirect(api_url, path, same_as):
    """werkzeug reads the path after its leading slashes (`//v1/runs` is `/v1/runs`): the route
    answers itself, with no Location and nothing of the Host."""
    status, headers, body = raw_get(api_url, path)
    assert (status, body) == raw_get(api_url, same_as)[::2] and status == 200 and "location" not in headers
    assert_not_reflected(headers, body, path)


def test_api_url_is_the_configured_public_url_whatever_the_host_header(api_url):
    status, headers, body = raw_get(api_url, "/v1/info")
    assert status == 200 and json.loads(body)["apiUrl"] == PUBLIC_URL
    assert_not_reflected(headers, body, "/v1/info")


def test_no_read_route_answers_with_the_host_header(api_url):
    walked = 0
    for route, operations in ROUTES.items():
        if "get" not in operations:
            continue
        path = route
        for name, kind in PATH_KINDS.items():
            path = path.replace("{" + name + "}", new_id(kind))
        path = path.replace("{modelId}", "builtin/tiny-qwen3").replace("{poolName}", "default")
        status, headers, body = raw_get(api_url, path)
        assert status < 500, (path, status)
        assert_not_reflected(headers, body, path)
        walked += 1
    for path in ["/ui", "/ui/", "/ui/index.html", "/docs", "/no/such/route"]:
        status, headers, body = raw_get(api_url, path)
        assert_not_reflected(headers, body, path)
        walked += 1
    assert walked >= 25


def test_without_a_public_url_api_url_is_null_not_the_host_header(redis_url, key_prefix, shared_artifacts):
    from services.api.app import create_app

    app = create_app(make_config(redis_url, key_prefix, shared_artifacts))
    resp = app.test_client().get("/v1/info", headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "Host": FORGED})
    assert resp.status_code == 200 and resp.json["apiUrl"] is None


def test_a_routing_redirect_is_relative(redis_url, key_prefix, shared_artifacts):
    """No route of the API has only a slashed form, so werkzeug's one remaining redirect (a rule
    `/x/` asked as `/x`) cannot happen today; a rule added later must not bring the Host back."""
    from services.api.app import create_app

    app = create_app(make_config(redis_url, key_prefix, shared_artifacts))
    app.add_url_rule("/v1/slashed/", "slashed", lambda: "here")
    resp = app.test_client().get("/v1/slashed?x=1", headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "Host": FORGED})
    assert resp.status_code == 308 and resp.headers["Location"] == "/v1/slashed/?x=1"
    assert FORGED not in resp.get_data(as_text=True)
    slashed = [rule.rule for rule in app.url_map.iter_rules()
               if rule.rule.endswith("/") and rule.rule not in ("/v1/slashed/", "/")]  # `/`: the dashboard's redirect
    rules = {rule.rule for rule in app.url_map.iter_rules()}
    assert all(rule.rstrip("/") in rules for rule in slashed), slashed  # each has its unslashed twin
