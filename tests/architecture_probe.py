"""`python -m tests.architecture_probe`: run the API as its own process and report what it imported.

Used by tests/test_architecture.py, in a fresh interpreter so that nothing else has loaded torch. It
serves the whole ASGI app (services/api/asgi.py) with uvicorn on a free port, submits one of each
resource over HTTP (datasets, an sft run, a grpo run with a registered reward function whose module
imports torch and leaves a marker file when it runs, an evaluation, an endpoint, two imported
snapshots, a comparison), calls every GET route of the OpenAPI document with their ids, and prints
one JSON line: the heavy modules loaded, any 5xx answers, what the reward check answered.

Environment: TRAINING_TEST_REDIS_URL, PROBE_KEY_PREFIX, PROBE_ARTIFACT_ROOT, PROBE_MARKER.
"""

from __future__ import annotations

import io
import json
import os
import sys
import tarfile
import threading
import time

import requests
import uvicorn

HEAVY = ("torch", "transformers", "peft", "trl", "accelerate", "datasets", "safetensors")
ADMIN = {"Authorization": "Bearer probe-admin-token"}
MANIFEST = {"layout": 2, "run": "run-elsewhere", "step": 8, "method": "sft", "engine": "sft-single",
            "precision": "fp32", "model": "builtin/tiny-qwen3", "gpus": 1, "release": "0.6.0",
            "weights": {"format": "peft-safetensors", "path": "adapter"},
            "trainingState": {"format": "hf-trainer", "path": "training_state"}}


def snapshot_archive(step: int) -> bytes:
    """A layout-2 snapshot directory as a tar; the adapter holds placeholder bytes nothing reads."""
    files = {"snapshot.json": json.dumps({**MANIFEST, "step": step}).encode(),
             "adapter/adapter_config.json": b"{}", "adapter/adapter_model.safetensors": b"weights"}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"snap/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def serve(app) -> tuple[str, uvicorn.Server]:
    from shared.process.ports import free_port

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, loop="asyncio", http="httptools",
                                           lifespan="on", log_config=None, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise SystemExit("the API did not start")
        time.sleep(0.02)
    return f"http://127.0.0.1:{port}", server


def main() -> int:
    from services.api.asgi import create_asgi_app
    from services.api.openapi import ROUTES
    from shared.config.deployment import parse_config

    marker = os.environ["PROBE_MARKER"]
    config = parse_config({
        "defaultPool": "default",
        "pools": {"default": {"nodes": [{"name": "local", "devices": {"kind": "cpu", "count": 2}}]}},
        "catalog": [{"id": "builtin/tiny-qwen3", "builtin": "tiny-qwen3"}],
        "tokens": [{"token": ADMIN["Authorization"].split()[1], "name": "admin", "admin": True}],
        "rewardFunctions": {"sidefx": "tests.reward_with_side_effects:bonus_reward"},
    }, {"TRAINING_REDIS_URL": os.environ["TRAINING_TEST_REDIS_URL"], "TRAINING_KEY_PREFIX": os.environ["PROBE_KEY_PREFIX"],
        "TRAINING_ARTIFACT_ROOT": os.environ["PROBE_ARTIFACT_ROOT"]})
    os.environ["REWARD_SIDE_EFFECT_MARKER"] = marker
    base, server = serve(create_asgi_app(config))
    http = requests.Session()
    http.trust_env = False
    statuses: dict[str, int] = {}

    def call(method: str, path: str, route: str | None = None, headers=None, **kwargs) -> requests.Response:
        response = http.request(method, base + path, headers={**ADMIN, **(headers or {})}, timeout=60, **kwargs)
        statuses[f"{method.upper()} {route or path}"] = response.status_code
        return response

    chat = b"\n".join(json.dumps({"messages": [{"role": "user", "content": f"q{i}"},
                                               {"role": "assistant", "content": f"a{i}"}]}).encode() for i in range(8))
    prompts = b"\n".join(json.dumps({"prompt": f"q{i}", "answer": f"a{i}"}).encode() for i in range(8))
    dataset = call("post", "/v1/datasets", files={"file": ("chat.jsonl", chat)}).json()["id"]
    prompt_set = call("post", "/v1/datasets", files={"file": ("prompts.jsonl", prompts)}).json()["id"]
    run = call("post", "/v1/runs", json={"model": "builtin/tiny-qwen3", "dataset": dataset,
                                         "hyperparameters": {"maxSteps": 2}}).json()["id"]
    grpo = {"method": "grpo", "model": "builtin/tiny-qwen3", "dataset": prompt_set,
            "grpo": {"rewards": [{"function": "sidefx", "bonus": 2}]}}
    accepted = call("post", "/v1/runs", json=grpo).status_code
    grpo["grpo"]["rewards"][0]["nope"] = 1
    unknown = call("post", "/v1/runs", json=grpo).status_code
    evaluation = call("post", "/v1/evaluations", json={"model": "builtin/tiny-qwen3", "dataset": dataset}).json()["id"]
    endpoint = call("post", "/v1/endpoints", json={"model": "builtin/tiny-qwen3", "name": "probe"}).json()["id"]
    snapshots = [call("post", "/v1/snapshots/import?name=snap.tar", data=snapshot_archive(step),
                      headers={"Content-Type": "application/x-tar"}).json()["id"] for step in (4, 8)]
    comparison = call("post", "/v1/comparisons", json={"snapshots": snapshots, "dataset": dataset}).json()["id"]
    call("post", "/v1/chat/completions", json={"model": endpoint, "messages": [{"role": "user", "content": "hi"}]})

    ids = {"runId": run, "datasetId": dataset, "endpointId": endpoint, "evaluationId": evaluation,
           "snapshotId": snapshots[0], "comparisonId": comparison, "modelId": "builtin/tiny-qwen3",
           "poolName": "default"}
    read_routes = [path for path, operations in ROUTES.items() if "get" in operations]
    for route in read_routes:
        path = route
        for name, value in ids.items():
            path = path.replace("{" + name + "}", value)
        call("get", path, route=route)
    call("get", f"/v1/snapshots?run={run}", route="/v1/snapshots?run")
    call("get", "/v1/runs?status=QUEUED", route="/v1/runs?status")

    server.should_exit = True
    heavy = sorted(name for name in sys.modules if name.split(".")[0] in HEAVY)
    print(json.dumps({
        "heavy": sorted({name.split(".")[0] for name in heavy}),
        "server_errors": {k: v for k, v in statuses.items() if v >= 500},
        "static_check": {"accepted": accepted, "unknown_parameter": unknown},
        "read_routes": read_routes,
        "called": sorted({k.split(" ", 1)[1] for k in statuses if k.startswith("GET ") and "?" not in k}),
        "statuses": statuses,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
