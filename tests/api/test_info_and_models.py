import io

from services.api.app import create_app
from tests.api.conftest import CHAT_ROWS
from tests.conftest import make_config


def test_health_needs_no_token(client):
    assert client.get("/v1/health").json["status"] == "ok"


def test_info(client, admin):
    info = client.get("/v1/info", headers=admin).json
    assert info["version"] == "0.6.0" and info["methods"] == ["grpo", "sft"] and info["catalogSize"] == 2
    default = next(p for p in info["pools"] if p["name"] == "default")
    assert default["nodes"] == [{"name": "local", "deviceKind": "cpu", "gpus": 2, "freeGpus": 2, "workerAlive": True,
                                 "workerReady": True, "endpointManagerAlive": True}]
    assert "engine" not in info and "rlEngine" not in info


def test_base_models_and_startable_runs(client, admin):
    items = client.get("/v1/base-models", headers=admin).json["items"]
    tiny = next(m for m in items if m["id"] == "builtin/tiny-qwen3")
    assert tiny["parameters"] > 10_000 and tiny["modality"] == "text" and "fp32" in tiny["precisions"]
    one = client.get("/v1/base-models/builtin/tiny-qwen3", headers=admin).json
    first = next(r for r in one["startableRuns"] if r["precision"] == "fp32")
    assert first == {"method": "sft", "gpus": 1, "precision": "fp32", "klPenalty": False, "restore": "none",
                     "engine": "sft-single", "pools": ["default", "big"], "memoryGiB": first["memoryGiB"]}
    assert 1.0 < first["memoryGiB"] < 2.0  # a CPU slot's process, mostly: ~100k parameters
    assert one["startableRunsAssume"] == {"adapter": {"rank": 8, "targetModules": "all-linear"},
                                          "hyperparameters": {"batchSize": 8, "gradientAccumulation": 1,
                                                              "maxSeqLength": 512}}
    # fp16 needs CUDA devices, and this deployment has only CPU slots
    assert all(r["precision"] != "fp16" for r in one["startableRuns"])
    real = client.get("/v1/base-models/Qwen/Qwen3-8B", headers=admin).json
    assert real["source"] == "path:/nonexistent/qwen3-8b" and real["parameters"] == 8_000_000_000
    assert client.get("/v1/base-models/none/such", headers=admin).status_code == 404


def test_base_models_show_their_generation_defaults(client, admin, tmp_path):
    """Issue 29 item 3: never an empty Generation row. The built-in model says its max_new_tokens;
    a real one whose files the API cannot read answers up to the deployment's limit."""
    tiny = client.get("/v1/base-models/builtin/tiny-qwen3", headers=admin).json
    assert tiny["generationDefaults"] == {"temperature": 0.0, "topP": 1.0, "topK": 0, "repetitionPenalty": 1.0,
                                          "maxTokens": 64, "maxTokensFrom": "model", "maxContext": 2048}
    real = client.get("/v1/base-models/Qwen/Qwen3-8B", headers=admin).json
    assert real["generationConfig"] == {}
    assert (real["generationDefaults"]["maxTokens"], real["generationDefaults"]["maxTokensFrom"],
            real["generationDefaults"]["maxContext"]) == (1024, "deployment", None)


def test_a_model_too_large_for_a_pool_is_not_listed_for_it_and_is_refused_there(redis_url, key_prefix,
                                                                                  shared_artifacts, admin):
    """SPEC 2.1: the list and the resolver agree, memory fit included: Qwen3-8B in bf16 (~22 GiB per
    GPU at the defaults) is listed for an 80 GiB pool and not for a 16 GiB one, where it is refused."""
    pools = {"default": {"nodes": [{"name": "local", "devices": {"kind": "cpu", "count": 2}}]},
             "gpu16": {"nodes": [{"name": "g16", "devices": {"kind": "cuda", "count": 8, "memoryGiB": 16}}]},
             "gpu80": {"nodes": [{"name": "g80", "devices": {"kind": "cuda", "count": 2, "memoryGiB": 80}}]}}
    client = create_app(make_config(redis_url, key_prefix, shared_artifacts, pools=pools)).test_client()
    model = client.get("/v1/base-models/Qwen/Qwen3-8B", headers=admin).json
    rows = {(r["method"], r["gpus"], r["klPenalty"], r["restore"], r["engine"]): r for r in model["startableRuns"]}
    one = rows["sft", 1, False, "none", "sft-single"]
    assert one["pools"] == ["default", "gpu80"] and 30 < one["memoryGiB"] < 40  # per GPU (gpu80's)
    # on 16 GiB GPUs it fits only sharded: sft-fsdp on 4 GPUs or more, nothing else
    assert {key[4] for key, r in rows.items() if "gpu16" in r["pools"]} == {"sft-fsdp"}
    assert rows["sft", 4, False, "none", "sft-fsdp"]["pools"] == ["gpu16"]
    assert ("sft", 4, False, "none", "sft-ddp") not in rows  # no node of 4+ GPUs it fits whole (or unknown memory)
    dataset = client.post("/v1/datasets", headers=admin, data={"file": (io.BytesIO(CHAT_ROWS), "d.jsonl")}).json
    body = {"model": "Qwen/Qwen3-8B", "dataset": dataset["id"], "precision": "bf16", "execution": {"gpus": 1}}
    refused = client.post("/v1/runs", headers=admin, json={**body, "execution": {"gpus": 1, "pool": "gpu16"}})
    assert refused.status_code == 422, refused.json
    assert refused.json["error"]["message"] == (
        f"model Qwen/Qwen3-8B needs about {one['memoryGiB']:.1f} GiB per GPU to train in bf16 with this adapter, "
        "and the nodes of pool gpu16 have 16.0 GiB per GPU")
    accepted = client.post("/v1/runs", headers=admin, json={**body, "execution": {"gpus": 1, "pool": "gpu80"}})
    assert accepted.status_code == 201, accepted.json
    assert accepted.json["engine"] == one["engine"]
    sharded = client.post("/v1/runs", headers=admin, json={**body, "execution": {"gpus": 4, "pool": "gpu16"}})
    assert sharded.status_code == 201, sharded.json
    assert sharded.json["engine"] == "sft-fsdp"


def test_openapi_document_and_docs_page(client):
    doc = client.get("/v1/openapi.json").json
    assert doc["openapi"].startswith("3.") and "/v1/runs" in doc["paths"]
    plan = doc["components"]["schemas"]["Plan"]
    assert plan["properties"]["execution"] and "hyperparameters" in plan["properties"]
    page = client.get("/docs")
    assert page.status_code == 200 and b"/v1/runs" in page.data


def test_every_route_is_in_the_openapi_document(app, client):
    """The document is written by hand (services/api/openapi.py ROUTES): a route added without it
    would be missing from /docs. The proxied OpenAI routes live outside Flask (services/api/asgi.py)."""
    import re

    from services.api.proxy import PROXIED_PATHS

    documented = {(path, method.upper()) for path, methods in client.get("/v1/openapi.json").json["paths"].items()
                  for method in methods}
    served = {(re.sub(r"<(?:\w+:)?(\w+)>", lambda m: "{" + _camel(m.group(1)) + "}", rule.rule), method)
              for rule in app.url_map.iter_rules() if rule.rule.startswith("/v1/")
              for method in rule.methods - {"HEAD", "OPTIONS"}}
    served |= {(path, "POST") for path in PROXIED_PATHS}
    assert served - documented == set()
    assert documented - served == set()


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def test_plan_defaults_are_what_a_plan_left_out_gets(client, admin):
    """Issue 30: GET /v1/plans/defaults, which the dashboard's plan panel marks defaults by."""
    defaults = client.get("/v1/plans/defaults", headers=admin).json["defaults"]
    assert defaults["hyperparameters.learningRate"] == 0.002 and defaults["adapter.rank"] == 8
    assert defaults["precision"] == "fp32" and defaults["grpo.numGenerations"] == 4
    assert "model" not in defaults and "dataset" not in defaults
    assert client.get("/v1/plans/defaults").status_code == 401


def test_the_docs_show_the_methods_info_answers(client, admin):
    """Issue 30: docs/api.md showed `methods: ["sft"]`; it shows what GET /v1/info answers."""
    import json
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    row = next(line for line in doc.splitlines() if line.startswith("| GET | `/v1/info` |"))
    shown = json.loads(re.search(r"methods: (\[[^\]]*\])", row).group(1))
    assert shown == client.get("/v1/info", headers=admin).json["methods"]
