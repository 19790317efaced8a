"""The OpenAPI document declares every query parameter a route reads, and only those.

What a route reads is found in the source: every `request.args` read (`.get("x")`, `["x"]`,
`"x" in`) in a function of services/api, followed through the calls of the route's view function
to the functions of services/api it calls (paging.page_args reads ?limit and ?after for each list,
paging.visible_filter ?status and ?workload, paging.log_page an event or metric log's ?after). A
read whose name is not written out is refused: the document could not be checked against it.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from services.api import schemas
from shared.labels import TAG_PATTERN
from shared.names import WORKLOAD_PATTERN, cursor_pattern
from shared.states import EndpointPhase, EvaluationStatus, RunStatus
from tests.api.openapi_check import openapi_path

API = Path(__file__).resolve().parents[2] / "services" / "api"

# (route, parameter): read only to refuse it. A list without states answers ?status= with 400
# naming the parameter (docs/api.md), so the document does not offer it.
REFUSED = {("get /v1/datasets", "status"), ("get /v1/snapshots", "status")}


def _is_request_args(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "args" and \
        isinstance(node.value, ast.Name) and node.value.id == "request"


def source_reads() -> tuple[dict[str, set[str]], dict[str, set[str]], list[str]]:
    """Per function name of services/api: the query parameters it reads itself, the names it calls;
    and every read that names no parameter in the source."""
    reads: dict[str, set[str]] = defaultdict(set)
    calls: dict[str, set[str]] = defaultdict(set)
    unnamed: list[str] = []
    for path in sorted(API.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
                    callee = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
                    calls[function.name].add(callee)
                    if isinstance(node.func, ast.Attribute) and _is_request_args(node.func.value):
                        arg = node.args[0] if node.args else None
                        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                            reads[function.name].add(arg.value)
                        else:
                            unnamed.append(f"{path.name}:{node.lineno} request.args.{node.func.attr}(...)")
                elif isinstance(node, ast.Subscript) and _is_request_args(node.value):
                    if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                        reads[function.name].add(node.slice.value)
                    else:
                        unnamed.append(f"{path.name}:{node.lineno} request.args[...]")
                elif isinstance(node, ast.Compare) and any(_is_request_args(c) for c in node.comparators):
                    if isinstance(node.left, ast.Constant):
                        reads[function.name].add(node.left.value)
                    else:
                        unnamed.append(f"{path.name}:{node.lineno} ... in request.args")
    return reads, calls, unnamed


def read_by(name: str, reads, calls, seen=None) -> set[str]:
    seen = set() if seen is None else seen
    if name in seen:
        return set()
    seen.add(name)
    found = set(reads.get(name, ()))
    for callee in calls.get(name, ()):
        found |= read_by(callee, reads, calls, seen)
    return found


def test_every_query_parameter_a_route_reads_is_declared_and_no_other(app, client):
    reads, calls, unnamed = source_reads()
    assert unnamed == [], "query parameters read under a name the source does not spell out"
    document = client.get("/v1/openapi.json").json
    missing, stale = [], []
    for rule in app.url_map.iter_rules():
        view = app.view_functions[rule.endpoint]
        if not view.__module__.startswith("services.api"):
            continue
        wanted = read_by(view.__name__, reads, calls)
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            route = f"{method.lower()} {rule.rule}"
            operation = document["paths"].get(openapi_path(rule.rule), {}).get(method.lower())
            declared = {p["name"] for p in (operation or {}).get("parameters", []) if p["in"] == "query"}
            expected = {name for name in wanted if (f"{method.lower()} {openapi_path(rule.rule)}", name) not in REFUSED}
            missing += [f"{route} ?{name}" for name in sorted(expected - declared)]
            stale += [f"{route} ?{name}" for name in sorted(declared - wanted)]
    assert missing == [], "query parameters read but not in the document"
    assert stale == [], "query parameters in the document that the route does not read"


def parameters(document: dict, path: str) -> dict[str, dict]:
    return {p["name"]: p for p in document["paths"][path]["get"].get("parameters", []) if p["in"] == "query"}


def test_list_parameters_say_their_types_and_states(client):
    document = client.get("/v1/openapi.json").json
    runs = parameters(document, "/v1/runs")
    assert set(runs) == {"limit", "after", "status", "workload", "name", "tag", "idPrefix"}
    assert runs["tag"]["schema"]["items"]["pattern"] == TAG_PATTERN and (runs["tag"]["style"], runs["tag"]["explode"]) == (
        "form", True)  # ?tag=a&tag=b
    assert runs["idPrefix"]["schema"]["pattern"] == "^run-[A-Za-z0-9_-]{1,64}$"
    assert {"name", "tag", "idPrefix"} <= set(parameters(document, "/v1/endpoints")) & set(
        parameters(document, "/v1/datasets"))
    for listed in ("/v1/snapshots", "/v1/evaluations", "/v1/comparisons"):  # ids, but no names or tags
        assert "idPrefix" in parameters(document, listed) and "tag" not in parameters(document, listed)
    assert runs["limit"]["schema"] == {"type": "integer", "minimum": 1, "maximum": 200, "default": 50}
    assert runs["after"]["schema"] == {"type": "string", "pattern": cursor_pattern()}  # an id, or empty (issue 26)
    assert runs["workload"]["schema"] == {"type": "string", "pattern": WORKLOAD_PATTERN}
    assert runs["status"]["schema"] == {"type": "array", "minItems": 1,
                                        "items": {"type": "string", "enum": list(RunStatus)}}
    assert (runs["status"]["style"], runs["status"]["explode"]) == ("form", False)  # ?status=QUEUED,RUNNING
    endpoints = parameters(document, "/v1/endpoints")
    assert endpoints["status"]["schema"]["items"]["enum"] == endpoints["phase"]["schema"]["items"]["enum"] == list(
        EndpointPhase)
    evaluations = parameters(document, "/v1/evaluations")
    assert {"comparison", "run"} <= set(evaluations)
    assert evaluations["status"]["schema"]["items"]["enum"] == list(EvaluationStatus)
    assert "status" not in parameters(document, "/v1/datasets") and "run" in parameters(document, "/v1/snapshots")
    for log in ("/v1/runs/{runId}/events", "/v1/runs/{runId}/metrics", "/v1/endpoints/{endpointId}/events",
                "/v1/evaluations/{evaluationId}/events"):
        assert parameters(document, log)["after"]["schema"] == {"type": "integer", "minimum": 0,
                                                                "maximum": 2**32 - 1, "default": 0}
    assert parameters(document, "/v1/endpoints/{endpointId}/logs")["lines"]["schema"] == {
        "type": "integer", "minimum": 1, "maximum": 10_000, "default": 100}
    imports = {p["name"] for p in document["paths"]["/v1/snapshots/import"]["post"]["parameters"] if p["in"] == "query"}
    assert imports == {"name", "workload"}
    # each path parameter still comes first, as before
    assert document["paths"]["/v1/runs/{runId}/events"]["get"]["parameters"][0]["in"] == "path"


def test_page_schemas_are_one_class_per_item():
    assert schemas.page_schema(schemas.RunSchema) is schemas.page_schema(schemas.RunSchema)
