def test_health_needs_no_token(client):
    assert client.get("/v1/health").json["status"] == "ok"


def test_info(client, admin):
    info = client.get("/v1/info", headers=admin).json
    assert info["version"] == "0.6.0" and info["methods"] == ["grpo", "sft"] and info["catalogSize"] == 2
    default = next(p for p in info["pools"] if p["name"] == "default")
    assert default["nodes"] == [{"name": "local", "deviceKind": "cpu", "gpus": 2, "freeGpus": 2}]
    assert "engine" not in info and "rlEngine" not in info


def test_base_models_and_startable_runs(client, admin):
    items = client.get("/v1/base-models", headers=admin).json["items"]
    tiny = next(m for m in items if m["id"] == "builtin/tiny-qwen3")
    assert tiny["parameters"] > 10_000 and tiny["modality"] == "text" and "fp32" in tiny["precisions"]
    one = client.get("/v1/base-models/builtin/tiny-qwen3", headers=admin).json
    assert {"method": "sft", "gpus": 1, "precision": "fp32", "klPenalty": False, "restore": "none",
            "engine": "sft-single"} in one["startableRuns"]
    # fp16 needs CUDA devices, and this deployment has only CPU slots
    assert all(r["precision"] != "fp16" for r in one["startableRuns"])
    real = client.get("/v1/base-models/Qwen/Qwen3-8B", headers=admin).json
    assert real["source"] == "path:/nonexistent/qwen3-8b" and real["parameters"] == 8_000_000_000
    assert client.get("/v1/base-models/none/such", headers=admin).status_code == 404


def test_openapi_document_and_docs_page(client):
    doc = client.get("/v1/openapi.json").json
    assert doc["openapi"].startswith("3.") and "/v1/runs" in doc["paths"]
    plan = doc["components"]["schemas"]["Plan"]
    assert plan["properties"]["execution"] and "hyperparameters" in plan["properties"]
    page = client.get("/docs")
    assert page.status_code == 200 and b"/v1/runs" in page.data
