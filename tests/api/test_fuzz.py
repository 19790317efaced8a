"""The whole API under schemathesis (issue 14): every operation of GET /v1/openapi.json, against
the real ASGI application (services/api/asgi.py: uvicorn, the Flask half and the asyncio proxy),
with every check schemathesis has, a fixed seed, a bounded number of cases per operation and a
wall-time bound, must give no server error and no answer that differs from the document.

The deployment holds one resource of each kind first (a dataset, a run, two imported snapshots, an
endpoint, an evaluation, a comparison) and schemathesis is told their ids, so the routes that read
one answer 200 with a real document as well as 404 for ids it makes up.

Two expectations are set apart from schemathesis' defaults, each for its reason:
- `positive_data_acceptance` also accepts 400 and 422 for a request the document calls valid: the
  document describes the shape of a request, and a well-shaped one can still name a pool, a cursor
  or a directory that is not there, or upload rows that are not JSONL; those are refused with a
  sentence (SPEC 7), and `not_a_server_error` still holds every answer to below 500.
- The proxied OpenAI routes (/v1/chat/completions, /v1/completions) are fuzzed like every other
  operation, and their errors are the API's own shape; their success answers are OpenAI's, which
  the document does not describe (no endpoint is READY here anyway, so none is sent).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.api.conftest import CHAT_ROWS
from tests.api.test_snapshot_import import snapshot_dir
from tests.conftest import ADMIN_TOKEN

SEED = 14
# Cases per operation and phase: about 3,000 cases in all, a minute on a 2-core machine
MAX_EXAMPLES = int(os.environ.get("TRAINING_FUZZ_EXAMPLES", "50"))
WALL_S = 300  # the bound of the whole run, well inside CI's time
PHASES = "examples,coverage,fuzzing,stateful"
# The failure types schemathesis reports (its core/failures.py, openapi/checks.py) the gate names.
SERVER_ERRORS = {"ServerError", "ContentTypeServerError"}
SCHEMA_MISMATCHES = {"JsonSchemaError", "MalformedJson", "UndefinedStatusCode", "UndefinedContentType",
                     "MissingContentType", "MalformedMediaType", "ContentDeserializationError",
                     "DiscriminatorMismatch", "MissingHeaders", "AllowHeaderMismatch"}


def _seed(http, api_url: str, headers: dict, tmp_path: Path) -> dict[str, str]:
    """One resource of each kind, through the API; their ids by the document's parameter names."""
    def post(path: str, **kw) -> dict:
        resp = http.post(f"{api_url}{path}", headers=headers, **kw)
        assert resp.status_code == 201, (path, resp.text)
        return resp.json()

    dataset = post("/v1/datasets", files={"file": ("d.jsonl", io.BytesIO(CHAT_ROWS))})["id"]
    run = post("/v1/runs", json={"model": "builtin/tiny-qwen3", "dataset": dataset,
                                 "hyperparameters": {"maxSteps": 2, "batchSize": 2}})["id"]
    snapshots = []
    for name in ("a", "b"):
        directory = snapshot_dir(tmp_path / name)
        snapshots.append(post("/v1/snapshots/import", json={"path": str(directory)})["id"])
    endpoint = post("/v1/endpoints", json={"model": "builtin/tiny-qwen3", "name": "fuzzed"})["id"]
    evaluation = post("/v1/evaluations", json={"model": "builtin/tiny-qwen3", "dataset": dataset})["id"]
    comparison = post("/v1/comparisons", json={"snapshots": snapshots, "dataset": dataset})["id"]
    return {"datasetId": dataset, "runId": run, "snapshotId": snapshots[0], "endpointId": endpoint,
            "evaluationId": evaluation, "comparisonId": comparison, "poolName": "default",
            "modelId": "builtin/tiny-qwen3"}


def _config(tmp_path: Path, ids: dict[str, str]) -> Path:
    lines = ["[parameters]", *(f'"path.{name}" = "{value}"' for name, value in ids.items()), "",
             "[checks.positive_data_acceptance]",
             'expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "422", "429"]']
    path = tmp_path / "schemathesis.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_schemathesis_finds_no_server_error_and_no_answer_the_document_does_not_describe(
        api_url, http, admin, tmp_path):
    ids = _seed(http, api_url, admin, tmp_path)
    report = tmp_path / "report.json"
    command = [
        sys.executable, "-m", "schemathesis.cli", "--config-file", str(_config(tmp_path, ids)),
        "run", f"{api_url}/v1/openapi.json",
        "--checks", "all", "--seed", str(SEED), "--max-examples", str(MAX_EXAMPLES), "--phases", PHASES,
        "--workers", "1", "--request-timeout", "30", "--suppress-health-check", "all",
        "--header", f"Authorization: Bearer {ADMIN_TOKEN}",
        "--report", "json", "--report-json-path", str(report),
    ]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=WALL_S, cwd=tmp_path,
                          env={**os.environ, "NO_COLOR": "1",
                               "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"})
    took_s = time.monotonic() - started
    (tmp_path / "schemathesis.txt").write_text(done.stdout + done.stderr)  # the whole account, kept with the report
    if os.environ.get("TRAINING_FUZZ_OUTPUT"):
        Path(os.environ["TRAINING_FUZZ_OUTPUT"]).write_text(done.stdout + done.stderr)
    assert report.exists(), done.stdout[-4000:] + done.stderr[-4000:]
    summary = json.loads(report.read_text())
    failures = {f["type"]: f for f in summary["failures"]}
    figures = (f"schemathesis {summary['schemathesis_version']}, seed {summary['seed']}: "
               f"{summary['operations']['tested']} operations, {summary['test_cases']['generated']} cases, "
               f"{took_s:.0f}s; failures: {sorted(failures) or 'none'}")
    print(figures)
    found = done.stdout[-12000:]
    assert summary["operations"]["tested"] == summary["operations"]["total"] >= 40, figures
    assert not SERVER_ERRORS & set(failures), figures + "\n" + found
    assert not SCHEMA_MISMATCHES & set(failures), figures + "\n" + found
    assert not failures, figures + "\n" + found  # every other check too
    assert summary["errors"] == [], figures + "\n" + found
