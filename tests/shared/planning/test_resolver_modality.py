"""The modality of a dataset and of a model must agree (issue 17): an image-text dataset is refused
for a text model and a text dataset for an image-text model, with a plain sentence, through
`resolve` and POST /v1/runs alike; the engines that declare image-text train it."""

from __future__ import annotations

import io

import pytest

from services.api.app import create_app
from shared import reasons
from shared.config.deployment import Node, Pool
from shared.errors import Unprocessable
from shared.models.tiny_models import builtin_facts
from shared.models.tiny_vision_model import SAMPLE_DATASET
from shared.planning import engines
from shared.planning.resolver import resolve, startable_runs
from tests.conftest import ADMIN_TOKEN, make_config
from tests.shared.plans.plan_fixtures import amended, typed

CPU_POOL = Pool("default", (Node("local", "cpu", 2),))
TEXT_MODEL = {"id": "builtin/tiny-qwen3", **builtin_facts("tiny-qwen3")}
VISION_MODEL = {"id": "builtin/tiny-gemma3-vision", **builtin_facts("tiny-gemma3-vision")}
PLAN = typed({"method": "sft", "dataset": "ds-rows", "precision": "fp32", "execution": {"gpus": 1}})
HEADERS = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
TEXT_ROWS = b'{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}\n' * 8


def test_each_modality_trains_only_on_its_own_rows():
    assert resolve(PLAN, model=VISION_MODEL, pool=CPU_POOL, dataset_format="chat",
                   dataset_modality="image-text").name == "sft-single"
    grpo = amended(PLAN, {"method": "grpo", "grpo": {"klPenalty": 0.0}})
    assert resolve(grpo, model=VISION_MODEL, pool=CPU_POOL, dataset_format="chat",
                   dataset_modality="image-text").name == "grpo-single"
    assert resolve(PLAN, model=TEXT_MODEL, pool=CPU_POOL, dataset_format="chat", dataset_modality="text").name == (
        "sft-single")
    for model, modality in ((TEXT_MODEL, "image-text"), (VISION_MODEL, "text")):
        with pytest.raises(Unprocessable) as refused:
            resolve(PLAN, model=model, pool=CPU_POOL, dataset_format="chat", dataset_modality=modality)
        assert refused.value.message == reasons.dataset_modality_refused(dataset="ds-rows", model=model["id"],
                                                                         dataset_modality=modality)
        assert refused.value.details["field"] == "dataset"


def test_startable_runs_of_the_image_text_model_are_those_of_the_engines_declaring_it():
    declared = {spec.name for spec in engines.ENGINES if "image-text" in spec.modalities}
    rows = startable_runs(VISION_MODEL, [CPU_POOL])
    assert rows and {r["engine"] for r in rows} == declared


def test_a_run_over_the_wrong_modality_is_refused_at_submission(redis_url, key_prefix, shared_artifacts):
    config = make_config(redis_url, key_prefix, shared_artifacts, extra_catalog=[
        {"id": "builtin/tiny-gemma3-vision", "builtin": "tiny-gemma3-vision"}])
    client = create_app(config).test_client()

    def upload(data: bytes) -> dict:
        resp = client.post("/v1/datasets", headers=HEADERS, data={"file": (io.BytesIO(data), "d.jsonl")})
        assert resp.status_code == 201, resp.json
        return resp.json

    pictures, text = upload(SAMPLE_DATASET.read_bytes()), upload(TEXT_ROWS)
    assert (pictures["modality"], pictures["rows"], text["modality"]) == ("image-text", 64, "text")
    for model, dataset, sentence in (
        ("builtin/tiny-qwen3", pictures,
         f"dataset {pictures['id']} holds images, and model builtin/tiny-qwen3 is a text model that cannot read them"),
        ("builtin/tiny-gemma3-vision", text,
         f"dataset {text['id']} holds no images, and model builtin/tiny-gemma3-vision is an image-text model "
         "that trains on rows with images"),
    ):
        resp = client.post("/v1/runs", headers=HEADERS,
                           json={"method": "sft", "model": model, "dataset": dataset["id"]})
        assert resp.status_code == 422, resp.json
        assert resp.json["error"]["message"] == sentence
    runs = client.get("/v1/runs", headers=HEADERS).json["items"]
    assert runs == []
    accepted = client.post("/v1/runs", headers=HEADERS, json={"method": "sft", "model": "builtin/tiny-gemma3-vision",
                                                               "dataset": pictures["id"], "precision": "fp32"})
    assert accepted.status_code == 201, accepted.json
    assert accepted.json["engine"] == "sft-single"


def test_a_packed_run_over_rows_with_images_is_refused_at_submission(redis_url, key_prefix, shared_artifacts):
    """Packing takes no rows with images: shared/plans/check.py refuses it before anything is stored
    (the sft engine no longer finds out at the run's start)."""
    config = make_config(redis_url, key_prefix, shared_artifacts, extra_catalog=[
        {"id": "builtin/tiny-gemma3-vision", "builtin": "tiny-gemma3-vision"}])
    client = create_app(config).test_client()
    pictures = client.post("/v1/datasets", headers=HEADERS,
                           data={"file": (io.BytesIO(SAMPLE_DATASET.read_bytes()), "d.jsonl")}).json
    body = {"method": "sft", "model": "builtin/tiny-gemma3-vision", "dataset": pictures["id"],
            "hyperparameters": {"packing": True}}
    refused = client.post("/v1/runs", headers=HEADERS, json=body)
    assert refused.status_code == 400, refused.json
    assert refused.json["error"]["message"] == reasons.IMAGE_ROWS_NOT_PACKED
    assert refused.json["error"]["details"] == {"field": "hyperparameters.packing"}
    assert client.get("/v1/runs", headers=HEADERS).json["items"] == []
    body["hyperparameters"]["packing"] = False
    assert client.post("/v1/runs", headers=HEADERS, json=body).status_code == 201


def test_an_evaluation_over_the_wrong_modality_is_refused_at_submission(redis_url, key_prefix, shared_artifacts):
    config = make_config(redis_url, key_prefix, shared_artifacts, extra_catalog=[
        {"id": "builtin/tiny-gemma3-vision", "builtin": "tiny-gemma3-vision"}])
    client = create_app(config).test_client()

    def upload(data: bytes) -> dict:
        resp = client.post("/v1/datasets", headers=HEADERS, data={"file": (io.BytesIO(data), "d.jsonl")})
        assert resp.status_code == 201, resp.json
        return resp.json

    pictures, text = upload(SAMPLE_DATASET.read_bytes()), upload(TEXT_ROWS)
    for model, dataset, sentence in (
        ("builtin/tiny-qwen3", pictures,
         f"dataset {pictures['id']} holds images, and model builtin/tiny-qwen3 is a text model that cannot read them"),
        ("builtin/tiny-gemma3-vision", text,
         f"dataset {text['id']} holds no images, and model builtin/tiny-gemma3-vision is an image-text model "
         "that is evaluated on rows with images"),
    ):
        resp = client.post("/v1/evaluations", headers=HEADERS, json={"model": model, "dataset": dataset["id"]})
        assert resp.status_code == 422, resp.json
        assert resp.json["error"]["message"] == sentence
        assert resp.json["error"]["details"]["field"] == "dataset"
    assert client.get("/v1/evaluations", headers=HEADERS).json["items"] == []
    accepted = client.post("/v1/evaluations", headers=HEADERS,
                           json={"model": "builtin/tiny-gemma3-vision", "dataset": pictures["id"]})
    assert accepted.status_code == 201, accepted.json
