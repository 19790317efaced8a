"""The OpenAPI document, generated from the marshmallow schemas, and a plain docs page."""

from __future__ import annotations

import html

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin

from services.api import schemas
from services.api.dataset_files import MAX_IMAGE_FILES
from services.api.endpoints import LOG_LINES_DEFAULT, LOG_LINES_MAX
from services.api.paging import MAX_LOG_INDEX
from services.api.views.snapshots import PATH_MAX_BYTES
from shared.config.version import VERSION
from shared.lifecycle.states import EndpointPhase, EvaluationStatus, RunStatus
from shared.plans import WORKLOAD_PATTERN, PlanSchema
from shared.schemas.endpoints import EndpointCreateSchema
from shared.schemas.evaluations import ComparisonCreateSchema, EvaluationCreateSchema
from shared.schemas.labels import NAME_MAX, TAG_PATTERN
from shared.schemas.names import FILE_NAME_MAX, cursor_pattern, id_pattern
from shared.store.rollout_samples import SAMPLE_PAGE_DEFAULT, SAMPLE_PAGE_MAX


def query(name: str, schema: dict, description: str, **extra) -> dict:
    """A query parameter of a route, as the document declares it."""
    return {"in": "query", "name": name, "required": False, "description": description, "schema": schema, **extra}


def status_filter(what: str, states) -> dict:
    # a comma list: OpenAPI's form style, not exploded (?status=QUEUED,RUNNING); an empty one is a 400
    return query("status", {"type": "array", "minItems": 1,
                            "items": {"type": "string", "enum": [str(s) for s in states]}},
                 f"only {what} in these states, a comma list (case does not matter; 400 for a state {what} "
                 "do not have)", style="form", explode=False)


def list_parameters(what: str, states=None, *more: dict) -> list[dict]:
    """?limit, ?after, ?workload, ?status (where the list has states) and the list's own filters."""
    common = [
        query("limit", {"type": "integer", "minimum": 1, "maximum": 200, "default": 50}, "items per page"),
        query("after", {"type": "string", "pattern": cursor_pattern()},
              "the nextCursor of the page before (400 for one this list did not give)"),
        query("workload", {"type": "string", "pattern": WORKLOAD_PATTERN}, f"only {what} of this workload"),
    ]
    return common + ([status_filter(what, states)] if states is not None else []) + list(more)


def id_prefix(prefix: str, what: str) -> dict:
    return query("idPrefix", {"type": "string", "pattern": f"^{prefix}-[A-Za-z0-9_-]{{1,64}}$"},
                 f"only {what} whose id starts with this (a short id as the CLI shows it; `{prefix}-` and at "
                 "least one more character)")


def label_parameters(what: str) -> list[dict]:
    """?name= and ?tag= of the lists whose resources have names and tags (shared/schemas/labels.py)."""
    return [
        query("name", {"type": "string", "minLength": 1, "maxLength": NAME_MAX},
              f"only {what} whose name holds this text (any case)"),
        query("tag", {"type": "array", "items": {"type": "string", "pattern": TAG_PATTERN}},
              f"only {what} carrying this tag; repeat it (?tag=a&tag=b) for {what} carrying every one",
              style="form", explode=True),
    ]


LOG_AFTER = [query("after", {"type": "integer", "minimum": 0, "maximum": MAX_LOG_INDEX, "default": 0},
                   "the index of the first entry to answer: the `next` of the answer before")]
LOG_LINES = [query("lines", {"type": "integer", "minimum": 1, "maximum": LOG_LINES_MAX, "default": LOG_LINES_DEFAULT},
                   "how many of its last lines")]

# The bodies the proxied OpenAI routes take, as far as the trainer reads them: a JSON object naming the
# endpoint in `model`; everything else is OpenAI's request, which the serving process checks.
OPENAI_REQUEST = {"type": "object", "required": ["model"], "additionalProperties": True, "properties": {
    "model": {"type": "string", "minLength": 1, "description": "the endpoint's id or name"},
    "stream": {"type": "boolean", "description": "answer as server-sent events"}}}
# POST /v1/snapshots/import takes three bodies (views/snapshots.py)
SNAPSHOT_IMPORT_BODY = {
    "application/json": {"schema": {"type": "object", "required": ["path"], "properties": {
                                        "path": {"type": "string", "minLength": 1, "maxLength": PATH_MAX_BYTES,
                                                 "description": "an absolute directory path on the API's machine"},
                                        "workload": {"type": "string", "nullable": True,
                                                     "pattern": WORKLOAD_PATTERN}}}},
    "multipart/form-data": {"schema": {"type": "object", "required": ["file"], "properties": {
        "file": {"type": "string", "format": "binary", "description": "a .tar or .tar.gz of the directory"},
        "workload": {"type": "string", "pattern": WORKLOAD_PATTERN}}}},
    "application/x-tar": {"schema": {"type": "string", "format": "binary"}},
    "application/gzip": {"schema": {"type": "string", "format": "binary"}},
}
# Routes a request may call without a token (app.OPEN_PATHS)
OPEN = {"/v1/health", "/v1/openapi.json"}
# Routes that never read Redis, so never answer 503 (every other one does while Redis is out of reach)
WITHOUT_STORE = {"/v1/openapi.json"}
PROXIED = {"/v1/chat/completions", "/v1/completions"}
# The answer of any route that reads Redis while Redis is out of reach (docs/faults.md)
UNAVAILABLE = {
    "description": "the store (Redis) is out of reach, even after the API's own retries; every service "
                   "reconnects by itself, so the request may be sent again after Retry-After seconds",
    "headers": {"Retry-After": {"description": "seconds to wait before sending the request again",
                                "schema": {"type": "integer", "minimum": 1}}},
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}

# The operations that write artifacts to disk, and the answer when that disk is full (docs/faults.md)
WRITES_ARTIFACTS = {("/v1/datasets", "post"), ("/v1/snapshots/import", "post"), ("/v1/base-models/import", "post")}
INSUFFICIENT_STORAGE = {
    "description": "the disk where the trainer stores artifacts is full: nothing was stored, and the same request "
                   "succeeds once an operator frees space (code insufficient_storage)",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}

# path -> {method: (summary, request schema or None, response schema, success status[, query parameters])}
ROUTES = {
    "/v1/health": {"get": ("liveness; needs no token", None, schemas.HealthSchema, 200)},
    "/v1/openapi.json": {"get": ("this document; needs no token (its page: /docs)", None, None, 200)},
    "/v1/info": {"get": ("the deployment", None, schemas.InfoSchema, 200)},
    "/v1/base-models": {"get": ("the catalog", None, schemas.page_schema(schemas.BaseModelSchema), 200)},
    "/v1/base-models/{modelId}": {"get": ("one model and the runs it can start", None, schemas.BaseModelSchema, 200)},
    "/v1/base-models/import": {"post": ("import a real model (admin tokens only): a Hugging Face directory or a GGUF "
                                        "file on the API's machine, its facts read from its own files",
                                        schemas.BaseModelImportSchema, schemas.BaseModelSchema, 201)},
    "/v1/datasets": {
        "post": ("upload a JSONL dataset (multipart field `file`, optional `name`, `workload`, and `images`: "
                 "image files the rows name by file name as an image part's url)", "multipart",
                 schemas.DatasetSchema, 201),
        "get": ("list datasets", None, schemas.page_schema(schemas.DatasetSchema), 200, list_parameters(
            "datasets", None, *label_parameters("datasets"), id_prefix("ds", "datasets"))),
    },
    "/v1/datasets/{datasetId}": {
        "get": ("one dataset (404 once deleted)", None, schemas.DatasetSchema, 200),
        "delete": ("delete a dataset no unfinished run or evaluation reads (409 naming them otherwise)", None,
                   schemas.DatasetSchema, 200),
    },
    "/v1/datasets/{datasetId}/rows": {
        "get": ("its first rows as stored (a preview)", None, schemas.DatasetRowsSchema, 200,
                [query("limit", {"type": "integer", "minimum": 1, "maximum": 20, "default": 5}, "how many rows")]),
    },
    "/v1/plans/defaults": {"get": ("the value each plan field gets when a request leaves it out, by dotted path",
                                   None, schemas.PlanDefaultsSchema, 200)},
    "/v1/runs": {
        "post": ("create a run from a plan; 422 when no engine trains it", PlanSchema, schemas.RunSchema, 201),
        "get": ("list runs", None, schemas.page_schema(schemas.RunSchema), 200, list_parameters(
            "runs", RunStatus, *label_parameters("runs"), id_prefix("run", "runs"))),
    },
    "/v1/runs/{runId}": {
        "get": ("one run", None, schemas.RunSchema, 200),
        "delete": ("cancel a run", None, schemas.RunSchema, 200),
    },
    "/v1/runs/{runId}/pause": {"post": ("pause: a snapshot with training state, GPUs released", None,
                                        schemas.RunSchema, 200)},
    "/v1/runs/{runId}/resume": {"post": ("queue a PAUSED run again; it continues exactly", None,
                                         schemas.RunSchema, 200)},
    "/v1/runs/{runId}/events": {"get": ("the run's event log", None, schemas.log_page_schema(schemas.EventSchema),
                                        200, LOG_AFTER)},
    "/v1/runs/{runId}/metrics": {"get": ("the run's metrics series", None,
                                         schemas.log_page_schema(schemas.MetricPointSchema), 200, LOG_AFTER)},
    "/v1/runs/{runId}/process-log": {"get": ("its process output as text/plain: the libraries' log lines, its events "
                                             "and metric points, each rank's output and, on failure, the traceback, "
                                             "of each worker process that trained it (the last 1 MiB of each, the "
                                             "last 8 processes)", None, None, 200)},
    "/v1/runs/{runId}/samples": {"get": (
        "a grpo run's rollout samples: prompts, completions, each reward's score, the weighted total and the "
        "advantage, for the first prompt groups of each of the last steps; one step with ?step=, else the latest "
        "steps first; 404 for a step not kept", None, schemas.page_schema(schemas.SampleStepSchema), 200, [
            query("step", {"type": "integer", "minimum": 1, "maximum": MAX_LOG_INDEX}, "only this step"),
            query("limit", {"type": "integer", "minimum": 1, "maximum": SAMPLE_PAGE_MAX,
                            "default": SAMPLE_PAGE_DEFAULT}, "steps per page"),
            query("after", {"type": "integer", "minimum": 1, "maximum": MAX_LOG_INDEX},
                  "the nextCursor of the page before: steps below it")])},
    "/v1/runs/{runId}/tensorboard": {"get": ("its TensorBoard event files as .tar.gz (`tensorboard --logdir` "
                                             "reads them unpacked; one file per attempt)", None, None, 200)},
    "/v1/endpoints": {
        "post": ("start an endpoint (it queues for GPUs)", EndpointCreateSchema, schemas.EndpointSchema, 201),
        "get": ("list endpoints", None, schemas.page_schema(schemas.EndpointSchema), 200, list_parameters(
            "endpoints", EndpointPhase, {**status_filter("endpoints", EndpointPhase), "name": "phase"},
            *label_parameters("endpoints"), id_prefix("ep", "endpoints"))),
    },
    "/v1/endpoints/{endpointId}": {
        "get": ("one endpoint; stopsAt while READY, what it waits on while QUEUED", None, schemas.EndpointSchema, 200),
        "delete": ("stop an endpoint", None, schemas.EndpointSchema, 200),
    },
    "/v1/endpoints/{endpointId}/events": {"get": ("the endpoint's event log", None,
                                                  schemas.log_page_schema(schemas.EventSchema), 200, LOG_AFTER)},
    "/v1/endpoints/{endpointId}/logs": {"get": ("the tail of its serving process's log, whatever its phase", None,
                                                schemas.EndpointLogSchema, 200, LOG_LINES)},
    "/v1/chat/completions": {"post": ("OpenAI chat completions, proxied to the endpoint named by `model` "
                                      "(its id or name); streams with stream: true", OPENAI_REQUEST, None, 200)},
    "/v1/completions": {"post": ("OpenAI completions, proxied like chat completions", OPENAI_REQUEST, None, 200)},
    "/v1/models": {"get": ("the READY endpoints, as OpenAI lists models", None, schemas.ModelListSchema, 200)},
    "/v1/pools": {"get": ("the pools: nodes, free and held GPUs, quotas with current use", None,
                          schemas.page_schema(schemas.PoolSchema), 200)},
    "/v1/pools/{poolName}": {"get": ("one pool with its holders and its queue in order, each claim's reason",
                                     None, schemas.PoolSchema, 200)},
    "/v1/snapshots": {"get": ("list snapshots", None, schemas.page_schema(schemas.SnapshotSchema), 200,
                              list_parameters("snapshots", None, query(
                                  "run", {"type": "string", "pattern": id_pattern("run")}, "only those the run wrote"),
                                  id_prefix("snap", "snapshots")))},
    "/v1/snapshots/import": {"post": ("register a snapshot directory written elsewhere: the body a .tar(.gz) of it "
                                      "(application/x-tar or application/gzip, ?name, ?workload; or multipart "
                                      "`file`), or JSON {path} on the API's machine; records which parts this "
                                      "deployment reads", "import", schemas.SnapshotSchema, 201, [
                                          query("name", {"type": "string", "minLength": 1, "maxLength": FILE_NAME_MAX},
                                                "an archive body: its file name, for "
                                                "the sentences and the snapshot's source"),
                                          query("workload", {"type": "string", "pattern": WORKLOAD_PATTERN},
                                                "an archive body: the workload it "
                                                "belongs to (multipart and JSON bodies carry `workload` themselves)"),
                                      ])},
    "/v1/snapshots/{snapshotId}": {"get": ("one snapshot", None, schemas.SnapshotSchema, 200)},
    "/v1/snapshots/{snapshotId}/adapter": {"get": ("the adapter (PEFT format) as .tar.gz", None, None, 200)},
    "/v1/evaluations": {
        "post": ("score a base model or a snapshot's adapter on a dataset (it queues for GPUs)",
                 EvaluationCreateSchema, schemas.EvaluationSchema, 201),
        "get": ("list evaluations", None, schemas.page_schema(schemas.EvaluationSchema), 200, list_parameters(
            "evaluations", EvaluationStatus,
            query("comparison", {"type": "string", "pattern": id_pattern("cmp")}, "only those of this comparison"),
            query("run", {"type": "string", "pattern": id_pattern("run")}, "only those scoring a snapshot of this run"),
            id_prefix("eval", "evaluations"))),
    },
    "/v1/evaluations/{evaluationId}": {
        "get": ("one evaluation; what it waits on while QUEUED", None, schemas.EvaluationSchema, 200),
        "delete": ("cancel an evaluation", None, schemas.EvaluationSchema, 200),
    },
    "/v1/evaluations/{evaluationId}/events": {"get": ("the evaluation's event log", None,
                                                      schemas.log_page_schema(schemas.EventSchema), 200, LOG_AFTER)},
    "/v1/evaluations/{evaluationId}/rows": {"get": ("per-row results as JSONL (once SUCCEEDED)", None, None, 200)},
    "/v1/comparisons": {
        "post": ("compare snapshots on one dataset: one evaluation each", ComparisonCreateSchema,
                 schemas.ComparisonSchema, 201),
        "get": ("list comparisons", None, schemas.page_schema(schemas.ComparisonSchema), 200,
                list_parameters("comparisons", EvaluationStatus, id_prefix("cmp", "comparisons"))),  # on the status derived from its evaluations
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
    spec.components.response("Unavailable", UNAVAILABLE)
    spec.components.response("InsufficientStorage", INSUFFICIENT_STORAGE)
    for path, operations in ROUTES.items():
        ops = {}
        for method, (summary, request_schema, response_schema, status, *query_parameters) in operations.items():
            op: dict = {"summary": summary, "security": [] if path in OPEN else [{"bearer": []}],
                        "responses": {str(status): {"description": "success"},
                                      "4XX": {"description": "bad input",
                                              "content": {"application/json": {"schema": "Error"}}}}}
            if response_schema is not None:
                op["responses"][str(status)]["content"] = {"application/json": {"schema": response_schema}}
            if path in PROXIED:
                op["responses"]["502"] = {"description": "the endpoint's serving process answered with a server "
                                                         "error, or not in time",
                                          "content": {"application/json": {"schema": "Error"}}}
            if path not in WITHOUT_STORE:
                op["responses"]["503"] = "Unavailable"
            if (path, method) in WRITES_ARTIFACTS:
                op["responses"]["507"] = "InsufficientStorage"
            if request_schema == "multipart":
                op["requestBody"] = {"required": True, "content": {"multipart/form-data": {"schema": {
                    "type": "object", "required": ["file"],
                    "properties": {"file": {"type": "string", "format": "binary"},
                                   "name": {"type": "string"}, "workload": {"type": "string"},
                                   "images": {"type": "array", "maxItems": MAX_IMAGE_FILES,
                                              "items": {"type": "string", "format": "binary"}}}}}}}
            elif request_schema == "import":
                op["requestBody"] = {"required": True, "content": SNAPSHOT_IMPORT_BODY}
            elif request_schema is not None:
                op["requestBody"] = {"required": True, "content": {"application/json": {"schema": request_schema}}}
            params = [{"in": "path", "name": p.strip("{}"), "required": True, "schema": {"type": "string"}}
                      for p in path.split("/") if p.startswith("{")]
            params += query_parameters[0] if query_parameters else []
            if params:
                op["parameters"] = params
            ops[method] = op
        spec.path(path=path, operations=ops)
    return _null_is_only_null(spec.to_dict())


# apispec writes a nullable nested schema as anyOf [its $ref, {"type": "object", "nullable": true}],
# and the second branch is any object at all: `"restore": {}` would be a valid plan. OpenAPI 3.0
# spells "null and nothing else" as a nullable type whose only value is null.
_ANY_OBJECT_OR_NULL = {"type": "object", "nullable": True}
ONLY_NULL = {"type": "object", "nullable": True, "enum": [None]}


def _null_is_only_null(node):
    """The document with every nullable nested schema's null branch allowing null only."""
    if isinstance(node, dict):
        node = {key: _null_is_only_null(value) for key, value in node.items()}
        if isinstance(node.get("anyOf"), list) and any("$ref" in branch for branch in node["anyOf"]):
            node["anyOf"] = [dict(ONLY_NULL) if branch == _ANY_OBJECT_OR_NULL else branch for branch in node["anyOf"]]
        return node
    if isinstance(node, list):
        return [_null_is_only_null(item) for item in node]
    return node


def docs_page(document: dict) -> str:
    rows = []
    for path, ops in document["paths"].items():
        for method, op in ops.items():
            asks = " ".join(f"?{p['name']}" for p in op.get("parameters", []) if p["in"] == "query")
            rows.append(f"<tr><td><code>{method.upper()}</code></td><td><code>{html.escape(path)}</code></td>"
                        f"<td>{html.escape(op.get('summary', ''))}</td><td><code>{html.escape(asks)}</code></td></tr>")
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>the trainer API</title>"
        "<style>body{font-family:sans-serif;margin:2em}td{padding:4px 12px;border-bottom:1px solid #ddd}</style>"
        f"</head><body><h1>the trainer API {VERSION}</h1>"
        "<p>Every request carries <code>Authorization: Bearer TOKEN</code>. Errors are "
        "<code>{\"error\": {\"code\", \"message\", \"details\"}}</code>. The full document: "
        "<a href='/v1/openapi.json'>/v1/openapi.json</a>.</p>"
        f"<table>{''.join(rows)}</table></body></html>"
    )
