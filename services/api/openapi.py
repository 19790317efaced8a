"""The OpenAPI document, generated from the marshmallow schemas, and a plain docs page."""

from __future__ import annotations

import html

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin

from services.api import schemas
from shared.endpoint_schema import EndpointCreateSchema
from shared.evaluation_schema import ComparisonCreateSchema, EvaluationCreateSchema
from shared.plans import PlanSchema
from shared.version import VERSION

# path -> {method: (summary, request schema or None, response schema, success status)}
ROUTES = {
    "/v1/health": {"get": ("liveness; needs no token", None, None, 200)},
    "/v1/openapi.json": {"get": ("this document; needs no token (its page: /docs)", None, None, 200)},
    "/v1/info": {"get": ("the deployment", None, schemas.InfoSchema, 200)},
    "/v1/base-models": {"get": ("the catalog", None, schemas.page_schema(schemas.BaseModelSchema), 200)},
    "/v1/base-models/{modelId}": {"get": ("one model and the runs it can start", None, schemas.BaseModelSchema, 200)},
    "/v1/datasets": {
        "post": ("upload a JSONL dataset (multipart field `file`, optional `name`, `workload`)", "multipart",
                 schemas.DatasetSchema, 201),
        "get": ("list datasets", None, schemas.page_schema(schemas.DatasetSchema), 200),
    },
    "/v1/datasets/{datasetId}": {
        "get": ("one dataset (404 once deleted)", None, schemas.DatasetSchema, 200),
        "delete": ("delete a dataset no unfinished run or evaluation reads (409 naming them otherwise)", None,
                   schemas.DatasetSchema, 200),
    },
    "/v1/runs": {
        "post": ("create a run from a plan; 422 when no engine trains it", PlanSchema, schemas.RunSchema, 201),
        "get": ("list runs (?status, ?workload, ?limit, ?after)", None, schemas.page_schema(schemas.RunSchema), 200),
    },
    "/v1/runs/{runId}": {
        "get": ("one run", None, schemas.RunSchema, 200),
        "delete": ("cancel a run", None, schemas.RunSchema, 200),
    },
    "/v1/runs/{runId}/pause": {"post": ("pause: a snapshot with training state, GPUs released", None,
                                        schemas.RunSchema, 200)},
    "/v1/runs/{runId}/resume": {"post": ("queue a PAUSED run again; it continues exactly", None,
                                         schemas.RunSchema, 200)},
    "/v1/runs/{runId}/events": {"get": ("the run's event log (?after=N)", None, None, 200)},
    "/v1/runs/{runId}/metrics": {"get": ("the run's metrics series (?after=N)", None, None, 200)},
    "/v1/endpoints": {
        "post": ("start an endpoint (it queues for GPUs)", EndpointCreateSchema, schemas.EndpointSchema, 201),
        "get": ("list endpoints (?status, ?workload)", None, schemas.page_schema(schemas.EndpointSchema), 200),
    },
    "/v1/endpoints/{endpointId}": {
        "get": ("one endpoint; stopsAt while READY, what it waits on while QUEUED", None, schemas.EndpointSchema, 200),
        "delete": ("stop an endpoint", None, schemas.EndpointSchema, 200),
    },
    "/v1/endpoints/{endpointId}/events": {"get": ("the endpoint's event log (?after=N)", None, None, 200)},
    "/v1/endpoints/{endpointId}/logs": {"get": ("the tail of its serving process's log, whatever its phase "
                                                "(?lines=N, 1..10000, default 100)", None, None, 200)},
    "/v1/chat/completions": {"post": ("OpenAI chat completions, proxied to the endpoint named by `model` "
                                      "(its id or name); streams with stream: true", None, None, 200)},
    "/v1/completions": {"post": ("OpenAI completions, proxied like chat completions", None, None, 200)},
    "/v1/models": {"get": ("the READY endpoints, as OpenAI lists models", None, None, 200)},
    "/v1/pools": {"get": ("the pools: nodes, free and held GPUs, quotas with current use", None,
                          schemas.page_schema(schemas.PoolSchema), 200)},
    "/v1/pools/{poolName}": {"get": ("one pool with its holders and its queue in order, each claim's reason",
                                     None, schemas.PoolSchema, 200)},
    "/v1/snapshots": {"get": ("list snapshots (?run)", None, schemas.page_schema(schemas.SnapshotSchema), 200)},
    "/v1/snapshots/import": {"post": ("register a snapshot directory written elsewhere: the body a .tar(.gz) of it "
                                      "(application/x-tar or application/gzip, ?name, ?workload; or multipart "
                                      "`file`), or JSON {path} on the API's machine; records which parts this "
                                      "deployment reads", None, schemas.SnapshotSchema, 201)},
    "/v1/snapshots/{snapshotId}": {"get": ("one snapshot", None, schemas.SnapshotSchema, 200)},
    "/v1/snapshots/{snapshotId}/adapter": {"get": ("the adapter (PEFT format) as .tar.gz", None, None, 200)},
    "/v1/evaluations": {
        "post": ("score a base model or a snapshot's adapter on a dataset (it queues for GPUs)",
                 EvaluationCreateSchema, schemas.EvaluationSchema, 201),
        "get": ("list evaluations (?status, ?workload, ?comparison, ?run)", None,
                schemas.page_schema(schemas.EvaluationSchema), 200),
    },
    "/v1/evaluations/{evaluationId}": {
        "get": ("one evaluation; what it waits on while QUEUED", None, schemas.EvaluationSchema, 200),
        "delete": ("cancel an evaluation", None, schemas.EvaluationSchema, 200),
    },
    "/v1/evaluations/{evaluationId}/events": {"get": ("the evaluation's event log (?after=N)", None, None, 200)},
    "/v1/evaluations/{evaluationId}/rows": {"get": ("per-row results as JSONL (once SUCCEEDED)", None, None, 200)},
    "/v1/comparisons": {
        "post": ("compare snapshots on one dataset: one evaluation each", ComparisonCreateSchema,
                 schemas.ComparisonSchema, 201),
        "get": ("list comparisons (?status, ?workload)", None, schemas.page_schema(schemas.ComparisonSchema), 200),
    },
    "/v1/comparisons/{comparisonId}": {
        "get": ("one comparison: a row per snapshot, the best marked", None, schemas.ComparisonSchema, 200),
        "delete": ("cancel every evaluation of it that has not ended", None, schemas.ComparisonSchema, 200),
    },
}


def build_spec() -> dict:
    spec = APISpec(title="the trainer", version=VERSION, openapi_version="3.0.3", plugins=[MarshmallowPlugin()])
    spec.components.security_scheme("bearer", {"type": "http", "scheme": "bearer"})
    spec.components.schema("Error", schema=schemas.ErrorSchema)
    for path, operations in ROUTES.items():
        ops = {}
        for method, (summary, request_schema, response_schema, status) in operations.items():
            op: dict = {"summary": summary, "security": [{"bearer": []}],
                        "responses": {str(status): {"description": "success"},
                                      "4XX": {"description": "bad input",
                                              "content": {"application/json": {"schema": "Error"}}}}}
            if response_schema is not None:
                op["responses"][str(status)]["content"] = {"application/json": {"schema": response_schema}}
            if request_schema == "multipart":
                op["requestBody"] = {"content": {"multipart/form-data": {"schema": {
                    "type": "object", "properties": {"file": {"type": "string", "format": "binary"},
                                                     "name": {"type": "string"}, "workload": {"type": "string"}}}}}}
            elif request_schema is not None:
                op["requestBody"] = {"content": {"application/json": {"schema": request_schema}}}
            params = [p.strip("{}") for p in path.split("/") if p.startswith("{")]
            if params:
                op["parameters"] = [{"in": "path", "name": p, "required": True, "schema": {"type": "string"}}
                                    for p in params]
            ops[method] = op
        spec.path(path=path, operations=ops)
    return spec.to_dict()


def docs_page(document: dict) -> str:
    rows = []
    for path, ops in document["paths"].items():
        for method, op in ops.items():
            rows.append(f"<tr><td><code>{method.upper()}</code></td><td><code>{html.escape(path)}</code></td>"
                        f"<td>{html.escape(op.get('summary', ''))}</td></tr>")
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>the trainer API</title>"
        "<style>body{font-family:sans-serif;margin:2em}td{padding:4px 12px;border-bottom:1px solid #ddd}</style>"
        f"</head><body><h1>the trainer API {VERSION}</h1>"
        "<p>Every request carries <code>Authorization: Bearer TOKEN</code>. Errors are "
        "<code>{\"error\": {\"code\", \"message\", \"details\"}}</code>. The full document: "
        "<a href='/v1/openapi.json'>/v1/openapi.json</a>.</p>"
        f"<table>{''.join(rows)}</table></body></html>"
    )
