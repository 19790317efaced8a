"""Every answer is its read schema, and the OpenAPI document describes what is really sent.

One deployment is brought to a state where every resource kind exists in its interesting shapes
(queued and waiting on others, running with progress and metrics, paused, branched, imported,
ready with a serving process, succeeded with metrics, cancelled, deleted), through the API and the
services' own code that writes the documents (the scheduler's dispatch, the worker's lease,
reporters and device stamp). Where a service needs what a test has no room for (a serving
process, a model scoring rows) its writes are made here in the shape it writes them, saying where.
Then every read route is asked, and:

- each answer validates against its schema in GET /v1/openapi.json (tests/api/openapi_check.py),
  and every route with a JSON schema answered at least once;
- each document an answer was made of has every field either declared by the read schema or
  named in schemas.INTERNAL_FIELDS with why, so a field added to a stored document is a decision,
  never a silent leak; and serialising changed no value it sent (an int stayed an int).
"""

from __future__ import annotations

import io
import json
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest
import structlog
from marshmallow import Schema, fields

from services.api import schemas
from services.api.openapi import ROUTES
from services.scheduler.dispatch import dispatch_granted
from services.trainer_worker.evaluation_job import EvaluationReporter
from services.trainer_worker.lease import Lease
from services.trainer_worker.node_worker import take_devices
from services.trainer_worker.reporter import RunReporter
from shared.claims.queue import ClaimQueue
from shared.lifecycle.states import EvaluationStatus, RunStatus, evaluation_transition, run_transition
from shared.models.tiny_models import ensure_builtin
from shared.snapshots.manifest import manifest, write_manifest
from shared.store.artifacts import endpoint_key, evaluation_rows_key, join, run_key
from shared.store.rollout_samples import step_sample
from shared.store.times import now_iso
from tests.api.conftest import CHAT_ROWS
from tests.api.openapi_check import openapi_path, problems

MODEL = "builtin/tiny-qwen3"


class _Celery:
    """Records the tasks the scheduler sends instead of talking to a broker (tests/e2e has the real one)."""

    def send_task(self, name, args, queue, task_id):
        pass


class Recorder:
    """Wraps schemas._dumper: every (schema, document) an answer is serialised from."""

    def __init__(self, dumper):
        self.dumper = dumper
        self.seen: list[tuple[type[Schema], Any]] = []

    def __call__(self, schema):
        real, seen = self.dumper(schema), self.seen

        class Recording:
            def dump(self, doc):
                seen.append((schema, json.loads(json.dumps(doc))))
                return real.dump(doc)

        return Recording()


class Answers:
    """The API through the test client, each JSON answer kept with the route that gave it."""

    def __init__(self, app, client, headers):
        self.app, self.client, self.headers = app, client, headers
        self.kept: list[tuple[str, str, int, Any]] = []

    def __call__(self, method: str, url: str, *, headers=None, status: int | None = None, **kw) -> Any:
        resp = self.client.open(url, method=method, headers=headers or self.headers, **kw)
        assert resp.status_code < 300 and (status is None or resp.status_code == status), (url, resp.json)
        rule, _ = self.app.url_map.bind("localhost").match(url.split("?")[0], method=method, return_rule=True)
        if resp.is_json:
            self.kept.append((openapi_path(rule.rule), method.lower(), resp.status_code, resp.json))
        return resp.json


def upload(ask, name: str, rows: bytes = CHAT_ROWS) -> dict:
    return ask("POST", "/v1/datasets", data={"file": (io.BytesIO(rows), name)}, content_type="multipart/form-data")


def snapshot_directory(root: Path, name: str, *, run: str | None) -> Path:
    directory = root / name
    (directory / "adapter").mkdir(parents=True)
    (directory / "adapter" / "adapter_config.json").write_text("{}")  # placeholders nothing loads
    (directory / "adapter" / "adapter_model.safetensors").write_bytes(b"weights")
    write_manifest(directory, manifest(run_id=run, step=8, method="sft", engine="sft-single", precision="fp32",
                                       model=MODEL, gpus=1))
    return directory


def granted(context, config, pool: str) -> None:
    """The scheduler's pass: grant what fits, then move what was granted to STARTING."""
    queue = ClaimQueue(context.redis, context.keys, config=config)
    queue.grant_pass(config, pool)
    dispatch_granted(queue=queue, store=context.store, celery_app=_Celery(), config=config)


@pytest.fixture
def world(app, client, admin, team, config, tmp_path, monkeypatch):
    """Every resource kind in the shapes the services give it; returns the answers and what they were made of."""
    recorder = Recorder(schemas._dumper)
    monkeypatch.setattr(schemas, "_dumper", recorder)
    context = app.extensions["trainer"]
    store, artifacts, log = context.store, context.artifacts, structlog.get_logger()
    ask = Answers(app, client, admin)

    ask("GET", "/v1/health")
    ask("GET", "/v1/info")
    ask("GET", "/v1/base-models")
    ask("GET", f"/v1/base-models/{MODEL}")
    ask("GET", "/v1/base-models/Qwen/Qwen3-8B")
    # a real model handed over as a Hugging Face directory: the tiny Qwen3's files
    handed = tmp_path / "handed-over"
    shutil.copytree(ensure_builtin("tiny-qwen3", context.artifacts), handed)
    (handed / "trainer_model.json").unlink()
    ask("POST", "/v1/base-models/import", status=201, json={"path": str(handed), "id": "acme/handed-over"})
    ask("GET", "/v1/base-models/acme/handed-over")

    dataset = upload(ask, "d.jsonl")["id"]
    validation = upload(ask, "v.jsonl")["id"]
    gone = upload(ask, "gone.jsonl", CHAT_ROWS + b"\n" + CHAT_ROWS)["id"]
    ask("DELETE", f"/v1/datasets/{gone}")
    ask("GET", f"/v1/datasets/{dataset}")
    ask("GET", f"/v1/datasets/{dataset}/rows?limit=2")
    ask("GET", "/v1/plans/defaults")
    ask("GET", "/v1/datasets?limit=2&workload=runs")

    # A run that trains on pool big: the scheduler starts it, the worker reports through its own
    # reporter (progress, metric points of a training step, a validation pass and a grpo step, a
    # snapshot), the user pauses it, the worker pauses it, the user resumes it.
    run = ask("POST", "/v1/runs", status=201, json={
        "model": MODEL, "dataset": dataset, "validationDataset": validation, "name": "trained",
        "hyperparameters": {"maxSteps": 4}, "execution": {"pool": "big"}})["id"]
    granted(context, config, "big")
    lease = Lease(context.redis, context.keys, run, "test-worker")
    assert lease.acquire()
    try:
        claim = context.claims().current(run)
        reporter = RunReporter(store=store, artifacts=artifacts, log=log, lease=lease,
                               run=store.update(run, take_devices(lease, claim["node"], claim["devices"])))
        reporter.started(total_steps=4)
        reporter.metrics({"step": 1, "loss": 2.5, "learningRate": 0.002, "gradNorm": 1.5, "tokensPerSecond": 800.0,
                          "epoch": 0.5})
        reporter.metrics({"step": 2, "validationLoss": 2.25, "validationPerplexity": 9.49})
        reporter.metrics({"step": 2, "loss": 2.0, "learningRate": 0.002, "gradNorm": None, "tokensPerSecond": 810.0,
                          "epoch": 1.0, "reward": 0.5, "rewardStd": 0.25,
                          "rewards": {"exact_match": {"mean": 0.5, "std": 0.25}}, "kl": None,
                          "completionLength": 12.5, "generationSeconds": 0.5, "handoffSeconds": 0.0,
                          "handoffBytes": 0, "rewardSeconds": 0.01, "updateSeconds": 0.2, "stepSeconds": 0.71})
        reporter.samples(step_sample(step=2, prompts=["q", "q"], completions=["a", None],
                                     scores={"exact_match": [1.0, None]}, weights={"exact_match": 1.0},
                                     advantages=[0.7, -0.7], group_size=2))
        reporter.flush_progress()
        reporter.snapshot(step=2, key=join(run_key(run), "step-2"),
                          directory=snapshot_directory(artifacts.scratch(run_key(run)), "step-2", run=run),
                          manifest=manifest(run_id=run, step=2, method="sft", engine="sft-single",
                                            precision="fp32", model=MODEL, gpus=1), final=False)
        reporter.event("a warning of the engine", level="warn")
        ask("POST", f"/v1/runs/{run}/pause")
        reporter.update(lambda d: {**d, "status": run_transition(d["status"], RunStatus.PAUSED).value,
                                       "pauseRequested": False})  # as run_job.train_run ends a paused run
        context.claims().release(claim["id"])
    finally:
        lease.release()
    ask("POST", f"/v1/runs/{run}/resume")
    trained = ask("GET", f"/v1/runs/{run}")["latestSnapshot"]
    ask("GET", f"/v1/runs/{run}/events")
    ask("GET", f"/v1/runs/{run}/metrics")
    ask("GET", f"/v1/runs/{run}/metrics?after=2")
    ask("GET", f"/v1/runs/{run}/samples?step=2")
    ask("GET", f"/v1/runs/{run}/samples?limit=1")

    imported = ask("POST", "/v1/snapshots/import", status=201,
                   json={"path": str(snapshot_directory(tmp_path, "elsewhere", run="run-elsewhere"))})["id"]
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        tar.add(snapshot_directory(tmp_path, "packed", run=None), arcname="packed")
    ask("POST", "/v1/snapshots/import?name=packed.tar&workload=runs", status=201, data=archive.getvalue(),
        content_type="application/x-tar")
    ask("GET", f"/v1/snapshots/{trained}")
    ask("GET", f"/v1/snapshots?run={run}&limit=5")
    ask("GET", "/v1/snapshots")

    # Pool default (2 slots, workload small's quota 1): a READY endpoint holds one, a run of small
    # the other; an endpoint wanting both and a second run of small wait, each for its reason.
    ready = ask("POST", "/v1/endpoints", status=201, json={"model": MODEL, "name": "judge-1"})["id"]
    granted(context, config, "default")
    log_file = f"endpoints/{ready}/server.log"
    (artifacts.scratch(endpoint_key(ready)) / "server.log").write_text("starting\nready\n")
    # what the endpoint manager writes (services/endpoint_manager/supervisor.py and manager.py)
    store.update(ready, lambda d: {**d, "process": {"pid": 4242, "port": 9001, "startedAt": now_iso(),
                                                    "backend": "builtin", "log": log_file, "startTicks": 123456,
                                                    "apiKey": "the-serving-secret"}})
    store.update(ready, lambda d: {**d, "phase": "READY", "address": "http://127.0.0.1:9001", "readyAt": now_iso(),
                                   "managerMissingSince": None})
    store.update(ready, lambda d: {**d, "lastRequestAt": now_iso()})  # as the proxy records a request
    theirs = upload(Answers(app, client, team), "t.jsonl")["id"]
    small = {"model": MODEL, "dataset": theirs, "workload": "small", "hyperparameters": {"maxSteps": 4}}
    ask("POST", "/v1/runs", headers=team, status=201, json=small)
    granted(context, config, "default")
    wide = ask("POST", "/v1/endpoints", status=201, json={"model": MODEL, "gpus": 2, "idleTimeout": 0})["id"]
    over_quota = ask("POST", "/v1/runs", headers=team, status=201, json=small)["id"]
    branch = ask("POST", "/v1/runs", status=201, json={
        "model": MODEL, "dataset": dataset, "restore": {"snapshot": trained, "what": "weights"},
        "hyperparameters": {"maxSteps": 4}})["id"]
    adapter = ask("POST", "/v1/endpoints", status=201, json={"model": MODEL, "snapshot": trained, "pool": "big"})["id"]
    # what the scheduler writes of an endpoint it moved off a node without a manager (lost_endpoints.py)
    store.update(adapter, lambda d: {**d, "requeuedAt": now_iso(), "leftBehind": [
        {"node": "gone-node", "pid": 4343, "startTicks": 654321}]})
    waits = ask("GET", f"/v1/runs/{over_quota}", headers=team)["scheduling"]
    assert waits["reason"] == "quota" and {"id": None, "kind": "endpoint", "gpus": 1} in waits["waitingOn"]["heldBy"]
    ask("GET", f"/v1/runs/{branch}")
    ask("GET", "/v1/runs?status=queued,running&workload=small", headers=team)
    ask("GET", "/v1/runs?limit=1")
    held_by = ask("GET", f"/v1/endpoints/{wide}")["scheduling"]["waitingOn"]["heldBy"]
    assert any(entry.get("idleSeconds") is not None for entry in held_by)
    ask("GET", f"/v1/endpoints/{ready}")
    ask("GET", f"/v1/endpoints/judge-1/logs?lines=1")
    ask("GET", f"/v1/endpoints/{ready}/events?after=0")
    ask("GET", "/v1/endpoints?phase=READY")
    ask("GET", "/v1/endpoints?status=queued&workload=endpoints")
    ask("GET", f"/v1/endpoints/{adapter}")
    ask("GET", "/v1/models")
    ask("GET", "/v1/pools")
    ask("GET", "/v1/pools/default")
    ask("GET", "/v1/pools/default", headers=team)
    ask("GET", "/v1/pools/big")
    ask("DELETE", f"/v1/endpoints/{wide}")  # QUEUED: TERMINATED at once
    ask("DELETE", f"/v1/endpoints/{ready}")  # READY: the manager stops it
    ask("GET", f"/v1/endpoints/{wide}")
    ask("DELETE", f"/v1/runs/{branch}")

    # An evaluation scored on pool big: the scheduler starts it, the worker's reporter writes its
    # progress; the end of evaluation_job.evaluate (metrics from engines/evaluate.score) is written
    # here, since no model scores rows in this test.
    scored = ask("POST", "/v1/evaluations", status=201, json={
        "model": MODEL, "dataset": dataset, "pool": "big", "maxTokens": 8,
        "rewards": [{"function": "length", "target": 20, "weight": 0.5}]})["id"]
    ask("DELETE", f"/v1/runs/{run}")
    granted(context, config, "big")
    lease = Lease(context.redis, context.keys, scored, "test-worker")
    assert lease.acquire()
    try:
        claim = context.claims().current(scored)
        doc = store.update(scored, take_devices(lease, claim["node"], claim["devices"]))
        reporter = EvaluationReporter(store=store, evaluation=doc, lease=lease, log=log)
        reporter.update(lambda d: {**d, "status": evaluation_transition(d["status"], EvaluationStatus.RUNNING).value,
                                   "startedAt": now_iso()})
        reporter.progress(2, 4, force=True)
        rows = evaluation_rows_key(scored)
        artifacts.put_file(rows, (json.dumps({"row": 0, "loss": 1.0}) + "\n").encode())
        reporter.update(lambda d: {
            **d, "status": evaluation_transition(d["status"], EvaluationStatus.SUCCEEDED).value,
            "finishedAt": now_iso(), "results": {"path": str(rows), "rows": 4},
            "metrics": {"rows": 4, "loss": 1.25, "perplexity": 3.49, "targetTokens": 40, "exactMatch": 0.25,
                        "rewards": {"length": 0.75}, "judge": None, "judgeUnparsable": 0}})
        context.claims().release(claim["id"])
    finally:
        lease.release()
    ask("GET", f"/v1/evaluations/{scored}")
    ask("GET", f"/v1/evaluations/{scored}/events")
    ask("GET", f"/v1/evaluations/{scored}/rows")  # JSONL: no JSON schema to hold it to

    compared = ask("POST", "/v1/comparisons", status=201,
                   json={"snapshots": [trained, imported], "dataset": dataset, "pool": "big"})["id"]
    ask("GET", f"/v1/comparisons/{compared}")
    ask("GET", "/v1/comparisons?status=QUEUED&limit=3")
    ask("GET", f"/v1/evaluations?comparison={compared}&status=queued")
    ask("GET", f"/v1/evaluations?run={run}")
    ask("GET", "/v1/evaluations?workload=evaluations")
    waiting = ask("GET", "/v1/evaluations?limit=1")["items"][0]["id"]
    ask("DELETE", f"/v1/evaluations/{waiting}")
    ask("DELETE", f"/v1/comparisons/{compared}")
    ask("POST", "/v1/evaluations", status=201, json={"model": MODEL, "dataset": dataset})
    return {"answers": ask.kept, "documents": list(recorder.seen), "dumper": recorder.dumper}


def test_every_answer_validates_against_the_document(client, world):
    document = client.get("/v1/openapi.json").json
    found, answered = [], set()
    for path, method, status, answer in world["answers"]:
        responses = document["paths"][path][method]["responses"]
        schema = responses[str(status)].get("content", {}).get("application/json", {}).get("schema")
        assert schema is not None, f"{method.upper()} {path} answers JSON its document gives no schema"
        found += [f"{method.upper()} {path}: {line}" for line in problems(document, schema, answer)]
        answered.add((path, method))
    assert found == [], "answers the document does not describe:\n" + "\n".join(found)
    described = {(path, method) for path, ops in ROUTES.items() for method, op in ops.items() if op[2] is not None}
    assert described - answered == set(), "routes this test never asked"


def test_read_schemas_say_additional_properties_false(client):
    """Every answer is dumped through its schema, so no object of an answer holds a field its schema
    does not declare, and the document may say so: additionalProperties false on each of them."""
    document = client.get("/v1/openapi.json").json
    requests = _named(document, [op.get("requestBody") for ops in document["paths"].values() for op in ops.values()])
    open_ = [name for name, schema in document["components"]["schemas"].items()
             if name not in requests and schema.get("additionalProperties") is not False]
    assert open_ == []


def _named(document: dict, roots: list[Any]) -> set[str]:
    """The component schemas `roots` refer to, directly or through one another."""
    names: set[str] = set()
    todo = list(roots)
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            name = ref.removeprefix("#/components/schemas/") if isinstance(ref, str) else ""
            if name and name not in names:
                names.add(name)
                todo.append(document["components"]["schemas"][name])
            todo += list(node.values())
        elif isinstance(node, list):
            todo += node
    return names


def project(schema: type[Schema] | Schema, doc: Any, undeclared: dict[type[Schema], set[str]]) -> Any:
    """What serialising `doc` should give, walked by hand: the declared fields, values untouched.
    Notes the undeclared field names it leaves out, per schema."""
    if doc is None:
        return None
    schema = schema if isinstance(schema, Schema) else schema()
    undeclared.setdefault(type(schema), set()).update(set(doc) - set(schema.fields))
    return {name: _value(field, doc[name], undeclared) for name, field in schema.fields.items() if name in doc}


def _value(field: fields.Field, value: Any, undeclared: dict[type[Schema], set[str]]) -> Any:
    if value is None:
        return None
    if isinstance(field, fields.Nested):
        return project(field.schema, value, undeclared)
    if isinstance(field, fields.List):
        return [_value(field.inner, item, undeclared) for item in value]
    if isinstance(field, fields.Dict) and field.value_field is not None:
        return {key: _value(field.value_field, item, undeclared) for key, item in value.items()}
    return value


def test_every_stored_field_is_public_or_internal_and_sent_as_stored(world):
    undeclared: dict[type[Schema], set[str]] = {}
    for schema, doc in world["documents"]:
        sent = world["dumper"](schema).dump(doc)
        expected = project(schema, doc, undeclared)
        assert json.dumps(sent, sort_keys=True) == json.dumps(expected, sort_keys=True), schema.__name__
    unclassified = {cls.__name__: sorted(names - set(schemas.internal_fields(cls)))
                    for cls, names in undeclared.items() if names - set(schemas.internal_fields(cls))}
    assert unclassified == {}, ("stored fields neither in their read schema nor in schemas.INTERNAL_FIELDS: "
                                "add each to one of them")
    stale = sorted(f"{cls.__name__}.{name}" for cls, table in schemas.INTERNAL_FIELDS.items() for name in table
                   if not any(issubclass(seen, cls) and name in names for seen, names in undeclared.items()))
    assert stale == [], "INTERNAL_FIELDS names fields this test never met in a stored document"
