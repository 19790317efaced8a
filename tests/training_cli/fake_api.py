"""A fake of the trainer's REST API (docs/api.md) for the CLI's tests.

It stands in for the real API (services/api), which is being written in parallel. It answers the
same paths with the same JSON shapes and the same error shape `{"error": {code, message, details}}`,
and it checks `Authorization: Bearer TOKEN`. Where it differs from the real thing:
- everything lives in process memory (no Redis, no artifact root, no scheduler or worker);
- a run does not train: each GET of a QUEUED/RUNNING run advances it 20 steps with a made-up,
  falling loss, and it SUCCEEDS at maxSteps (default 40), writing a snapshot record per 20 steps;
  a run whose plan has `"fail": true` FAILS instead;
- plans are barely validated: only `method` and `dataset` are checked, and `gpus > 2` is refused
  with the resolver's sentence for the sake of the error-rendering tests;
- a dataset upload is refused (with per-line faults) when a line is not JSON; nothing else is
  checked; the adapter download is a tar.gz of two tiny fake files;
- one token, no workloads or admin roles; lists are not paged (nextCursor is always null);
- `apiUrl` is TRAINING_PUBLIC_URL, the environment variable the real API reads too (not its config file).

Run it alone with `python tests/training_cli/fake_api.py --port 8600` (used by the local-stack test).
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import logging
import os
import tarfile
import threading
from datetime import datetime, timezone
from typing import Any

from flask import Flask, jsonify, request, send_file
from werkzeug.serving import make_server

TOKEN = "test-token-1234"
MODEL = {
    "id": "builtin/tiny-qwen3", "source": "builtin", "modality": "text", "parameters": 2_100_000,
    "precisions": ["fp32"], "gpuCounts": [1, 2], "loraTargetModules": ["q_proj", "v_proj"],
    "generationConfig": {}, "generationDefaults": {"temperature": 0.0, "topP": 1.0, "topK": 0, "repetitionPenalty": 1.0,
                                                   "maxTokens": 1024, "maxTokensFrom": "deployment", "maxContext": 8192},
}
STARTABLE = [
    {"method": "sft", "gpus": 1, "precision": "fp32", "klPenalty": False, "restore": "none", "engine": "sft-single",
     "pools": ["default", "big"], "memoryGiB": 0.6},
    {"method": "sft", "gpus": 2, "precision": "fp32", "klPenalty": False, "restore": "none", "engine": "sft-ddp",
     "pools": ["default"], "memoryGiB": 0.6},
]
STARTABLE_ASSUME = {"adapter": {"rank": 8, "targetModules": "all-linear"},
                    "hyperparameters": {"batchSize": 8, "gradientAccumulation": 1, "maxSeqLength": 512}}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _error(status: int, code: str, message: str, details: Any = None):
    return jsonify({"error": {"code": code, "message": message, "details": details or {}}}), status


def create_app(token: str = TOKEN) -> Flask:
    app = Flask(__name__)
    ids = itertools.count(1)
    state: dict[str, dict[str, Any]] = {"datasets": {}, "runs": {}, "snapshots": {}, "events": {}}
    app.config["STATE"] = state

    @app.before_request
    def _auth():
        if request.path == "/v1/health":
            return None
        if request.headers.get("Authorization") != f"Bearer {token}":
            return _error(401, "unauthenticated", "this request needs a valid token (Authorization: Bearer TOKEN)")
        return None

    @app.get("/v1/health")
    def health():
        return jsonify({"status": "ok"})

    @app.get("/v1/info")
    def info():
        node = {"name": "local", "deviceKind": "cpu", "gpus": 2, "freeGpus": 2}
        return jsonify({"version": "0.6.0", "apiUrl": os.environ.get("TRAINING_PUBLIC_URL"), "methods": ["sft"],
                        "pools": [{"name": "default", "nodes": [node], "gpus": 2, "freeGpus": 2}], "catalogSize": 1})

    @app.get("/v1/base-models")
    def base_models():
        return jsonify({"items": [MODEL], "nextCursor": None})

    @app.get("/v1/base-models/<path:model_id>")
    def base_model(model_id: str):
        if model_id != MODEL["id"]:
            return _error(404, "not_found", f"base model {model_id} does not exist", {"id": model_id})
        return jsonify({**MODEL, "startableRuns": STARTABLE, "startableRunsAssume": STARTABLE_ASSUME})

    @app.post("/v1/datasets")
    def create_dataset():
        upload = request.files.get("file")
        if upload is None:
            return _error(400, "invalid", "a dataset upload needs a multipart field named file")
        body = upload.read()
        faults = []
        for number, line in enumerate(body.decode().splitlines(), start=1):
            try:
                json.loads(line)
            except ValueError:
                faults.append({"line": number, "field": "(line)", "problem": "is not valid JSON"})
        if faults:
            first = faults[0]
            return _error(400, "invalid", f"dataset line {first['line']}, field {first['field']}: {first['problem']}",
                          {"faults": faults[:20], "faultCount": len(faults)})
        ds = {"id": f"ds-{next(ids):04d}", "name": request.form.get("name") or upload.filename,
              "workload": request.form.get("workload") or "runs", "digest": "sha256:fake", "bytes": len(body),
              "rows": len(body.splitlines()), "format": "chat", "createdAt": _now(), "updatedAt": _now()}
        state["datasets"][ds["id"]] = ds
        return jsonify(ds), 201

    @app.get("/v1/datasets")
    def list_datasets():
        return jsonify({"items": list(state["datasets"].values())[::-1], "nextCursor": None})

    @app.get("/v1/datasets/<ds_id>")
    def get_dataset(ds_id: str):
        if ds_id not in state["datasets"]:
            return _error(404, "not_found", f"dataset {ds_id} does not exist", {"id": ds_id})
        return jsonify(state["datasets"][ds_id])

    @app.post("/v1/runs")
    def create_run():
        plan = request.get_json(silent=True)
        if not isinstance(plan, dict) or plan.get("method") not in ("sft", "grpo"):
            return _error(400, "invalid", "method must be sft or grpo", {"field": "method"})
        if plan.get("dataset") not in state["datasets"]:
            return _error(404, "not_found", f"dataset {plan.get('dataset')} does not exist")
        gpus = (plan.get("execution") or {}).get("gpus", 1)
        if gpus > 2:
            return _error(422, "refused", f"this deployment does not train {plan['method']} on {gpus} GPU(s)")
        total = (plan.get("hyperparameters") or {}).get("maxSteps", 40)
        run = {"id": f"run-{next(ids):04d}", "workload": plan.get("workload", "runs"), "status": "QUEUED",
               "detail": None, "plan": plan, "engine": "sft-single", "pool": "default", "gpus": gpus,
               "progress": {"step": 0, "totalSteps": total, "loss": None, "firstLoss": None,
                            "tokensPerSecond": None, "etaSeconds": None},
               "scheduling": {"claim": "claim-1", "pool": "default", "node": None, "devices": [], "position": 1},
               "snapshots": [], "latestSnapshot": None, "createdAt": _now(), "updatedAt": _now(),
               "startedAt": None, "finishedAt": None}
        state["runs"][run["id"]] = run
        state["events"][run["id"]] = [{"time": _now(), "level": "info", "message": "queued in pool default"}]
        return jsonify(run), 201

    @app.get("/v1/runs")
    def list_runs():
        runs = list(state["runs"].values())[::-1]
        if request.args.get("status"):
            runs = [r for r in runs if r["status"] == request.args["status"]]
        return jsonify({"items": runs[: int(request.args.get("limit", 50))], "nextCursor": None})

    @app.get("/v1/runs/<run_id>")
    def get_run(run_id: str):
        if run_id not in state["runs"]:
            return _error(404, "not_found", f"run {run_id} does not exist", {"id": run_id})
        run = state["runs"][run_id]
        _advance(state, run)
        return jsonify(run)

    @app.delete("/v1/runs/<run_id>")
    def cancel_run(run_id: str):
        run = state["runs"].get(run_id)
        if run is None:
            return _error(404, "not_found", f"run {run_id} does not exist", {"id": run_id})
        if run["status"] in ("SUCCEEDED", "FAILED", "CANCELLED"):
            return _error(409, "conflict", f"run {run_id} already ended {run['status']}")
        run.update(status="CANCELLED", detail="cancelled by the user", finishedAt=_now())
        return jsonify(run)

    @app.get("/v1/runs/<run_id>/events")
    def events(run_id: str):
        after = int(request.args.get("after", 0))
        items = state["events"].get(run_id, [])
        return jsonify({"items": items[after:], "next": len(items)})

    @app.get("/v1/runs/<run_id>/metrics")
    def metrics(run_id: str):
        after = int(request.args.get("after", 0))
        items = state.setdefault("metrics", {}).get(run_id, [])
        return jsonify({"items": items[after:], "next": len(items)})

    @app.get("/v1/snapshots")
    def list_snapshots():
        snaps = [s for s in state["snapshots"].values() if request.args.get("run") in (None, s.get("run"))]
        return jsonify({"items": snaps[::-1], "nextCursor": None})

    @app.get("/v1/snapshots/<snap_id>")
    def get_snapshot(snap_id: str):
        if snap_id not in state["snapshots"]:
            return _error(404, "not_found", f"snapshot {snap_id} does not exist", {"id": snap_id})
        return jsonify(state["snapshots"][snap_id])

    @app.get("/v1/snapshots/<snap_id>/adapter")
    def adapter(snap_id: str):
        if snap_id not in state["snapshots"]:
            return _error(404, "not_found", f"snapshot {snap_id} does not exist", {"id": snap_id})
        return send_file(io.BytesIO(adapter_archive()), mimetype="application/gzip",
                         download_name=f"{snap_id}.tar.gz")

    return app


def adapter_archive(members: dict[str, bytes] | None = None) -> bytes:
    members = members or {"adapter_config.json": b'{"r": 8, "peft_type": "LORA"}',
                          "adapter_model.safetensors": b"\x00" * 64}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _advance(state: dict[str, Any], run: dict[str, Any]) -> None:
    """Each read of an active run moves it on: QUEUED -> RUNNING, +20 steps, SUCCEEDED at the end."""
    progress, events = run["progress"], state["events"][run["id"]]
    if run["status"] == "QUEUED":
        run.update(status="RUNNING", startedAt=_now(),
                   scheduling={"claim": "claim-1", "pool": "default", "node": "local", "devices": ["cpu:0"],
                               "position": None})
        events.append({"time": _now(), "level": "info", "message": "started on local (cpu:0)"})
        return
    if run["status"] != "RUNNING":
        return
    if run["plan"].get("fail"):
        run.update(status="FAILED", detail="training failed: out of patience", finishedAt=_now())
        events.append({"time": _now(), "level": "error", "message": "training failed: out of patience"})
        return
    step = min(progress["step"] + 20, progress["totalSteps"])
    loss = round(4.0 / (1 + step / 20), 3)
    progress.update(step=step, loss=loss, firstLoss=progress["firstLoss"] or 4.1, tokensPerSecond=5100.0,
                    etaSeconds=(progress["totalSteps"] - step) * 0.1)
    snap = {"id": f"snap-{run['id'][4:]}-{step}", "run": run["id"], "step": step, "layout": 2, "gpus": 1,
            "method": "sft", "engine": run["engine"], "precision": "fp32", "model": run["plan"].get("model"),
            "contents": {"weights": {"format": "peft-safetensors"}, "trainingState": {"format": "torch"}},
            "final": step >= progress["totalSteps"], "workload": run["workload"], "createdAt": _now()}
    state["snapshots"][snap["id"]] = snap
    run["snapshots"].append(snap["id"])
    run["latestSnapshot"] = snap["id"]
    events.append({"time": _now(), "level": "info", "message": f"step {step}: loss {loss}"})
    state.setdefault("metrics", {}).setdefault(run["id"], []).append({"step": step, "loss": loss, "attempt": 0})
    if step >= progress["totalSteps"]:
        run.update(status="SUCCEEDED", finishedAt=_now())
        events.append({"time": _now(), "level": "info", "message": "succeeded"})


class FakeApi:
    """The fake API on a free port in a background thread: `with FakeApi() as api: api.url`."""

    def __init__(self, token: str = TOKEN, port: int = 0):
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no request lines in the CLI's output
        self.app = create_app(token)
        self.server = make_server("127.0.0.1", port, self.app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def state(self) -> dict[str, Any]:
        return self.app.config["STATE"]

    def __enter__(self) -> "FakeApi":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.thread.join(5)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8600)
    args = parser.parse_args()
    import os

    app = create_app(os.environ.get("TRAINING_ADMIN_TOKEN") or TOKEN)
    make_server(args.host, args.port, app, threaded=True).serve_forever()
