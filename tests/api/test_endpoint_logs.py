"""GET /v1/endpoints/ID/logs and `training endpoints logs`: the tail of the serving process's log,
through the real API (Flask app, real Redis, the artifact root on disk). The log file is written
here where the endpoint manager's supervisor writes it (`endpoints/ID/server.log`, recorded as
`process.log`); the real serving process's log is read end to end in tests/e2e/test_endpoints.py."""

from __future__ import annotations

import json
import threading

import pytest
import yaml
from click.testing import CliRunner
from werkzeug.serving import make_server

from services.api.app import create_app
from shared.process import logs
from tests.conftest import ADMIN_TOKEN
from training_cli.main import cli


def endpoint_with_log(app, client, admin, lines: list[str], phase: str = "READY") -> str:
    ep = client.post("/v1/endpoints", headers=admin, json={"model": "builtin/tiny-qwen3"}).json
    context = app.extensions["trainer"]
    relative = f"endpoints/{ep['id']}/server.log"
    path = context.artifacts.path(relative)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines))
    context.store.update(ep["id"], lambda d: {**d, "phase": phase, "process": {"pid": 1, "port": 1, "log": relative}})
    return ep["id"]


def test_the_tail_of_the_log_whatever_the_phase(app, client, admin):
    lines = [f"line {i}" for i in range(500)]
    endpoint_id = endpoint_with_log(app, client, admin, lines)
    answer = client.get(f"/v1/endpoints/{endpoint_id}/logs", headers=admin)
    assert answer.status_code == 200
    assert answer.json == {"endpoint": endpoint_id, "phase": "READY", "log": f"endpoints/{endpoint_id}/server.log",
                           "lines": lines[-100:]}
    assert client.get(f"/v1/endpoints/{endpoint_id}/logs?lines=3", headers=admin).json["lines"] == lines[-3:]
    assert client.get(f"/v1/endpoints/{endpoint_id}/logs?lines=10000", headers=admin).json["lines"] == lines

    ended = endpoint_with_log(app, client, admin, ["--- starting", "Traceback: boom"], phase="FAILED")
    assert client.get(f"/v1/endpoints/{ended}/logs?lines=1", headers=admin).json["lines"] == ["Traceback: boom"]


def test_a_long_log_is_read_from_its_end(app, client, admin):
    lines = [f"{i:06d} " + "x" * 200 for i in range(3000)]  # ~600 KB: several blocks back from the end
    endpoint_id = endpoint_with_log(app, client, admin, lines)
    assert client.get(f"/v1/endpoints/{endpoint_id}/logs?lines=700", headers=admin).json["lines"] == lines[-700:]


def test_unknown_ids_no_log_yet_and_bad_lines_are_4xx(app, client, admin):
    resp = client.get("/v1/endpoints/ep-nope/logs", headers=admin)
    assert resp.status_code == 404 and resp.json["error"]["message"] == "endpoint ep-nope does not exist"
    queued = client.post("/v1/endpoints", headers=admin, json={"model": "builtin/tiny-qwen3"}).json
    resp = client.get(f"/v1/endpoints/{queued['id']}/logs", headers=admin)
    assert resp.status_code == 404
    assert resp.json["error"]["message"] == (
        f"endpoint {queued['id']} has no serving log (QUEUED); its log starts with its serving process")
    endpoint_id = endpoint_with_log(app, client, admin, ["x"])
    for bad in ("0", "abc", "10001", "-3"):
        resp = client.get(f"/v1/endpoints/{endpoint_id}/logs?lines={bad}", headers=admin)
        assert resp.status_code == 400, bad
        assert resp.json["error"]["message"] == "lines must be a whole number from 1 to 10000"
        assert resp.json["error"]["details"]["field"] == "lines"


@pytest.fixture
def served(config):
    logs.configure("api", "WARNING")  # the API's request log goes to the real stderr, not the CLI's output
    app = create_app(config)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield app, f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def test_training_endpoints_logs(served, admin):
    app, api_url = served
    endpoint_id = endpoint_with_log(app, app.test_client(), admin, ["one", "two", "three"])
    runner = CliRunner()
    env = {"TRAINING_API_URL": api_url, "TRAINING_TOKEN": ADMIN_TOKEN}
    result = runner.invoke(cli, ["endpoints", "logs", endpoint_id, "--lines", "2"], env=env, catch_exceptions=False)
    assert result.exit_code == 0 and result.output == "two\nthree\n"
    answer = {"endpoint": endpoint_id, "phase": "READY", "log": f"endpoints/{endpoint_id}/server.log",
              "lines": ["two", "three"]}
    for fmt, parse in (("json", json.loads), ("yaml", yaml.safe_load)):
        result = runner.invoke(cli, ["endpoints", "logs", endpoint_id, "-n", "2", "-o", fmt], env=env,
                               catch_exceptions=False)
        assert result.exit_code == 0 and parse(result.output) == answer
    result = runner.invoke(cli, ["endpoints", "logs", "ep-nope"], env=env, catch_exceptions=False)
    assert result.exit_code != 0 and "endpoint ep-nope does not exist" in result.output
    result = runner.invoke(cli, ["endpoints", "logs", endpoint_id, "--lines", "0"], env=env, catch_exceptions=False)
    assert result.exit_code == 2 and "0 is not in the range 1<=x<=10000" in result.output


def test_the_route_is_in_the_openapi_document(client):
    paths = client.get("/v1/openapi.json").json["paths"]
    assert "get" in paths["/v1/endpoints/{endpointId}/logs"]
