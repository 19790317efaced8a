"""A catalog model that loads from the Hugging Face hub cache is refused at submission when it is
not in the cache (a 400 naming the cache and the command that fills it), not after its run, evaluation
or endpoint was granted GPUs; once it is there, the same requests queue."""

from __future__ import annotations

import pytest

from shared.models.tiny_models import ensure_builtin
from shared.store.artifacts import ArtifactRoot
from tests.conftest import make_config
from tests.shared.models.hub_cache import add_to_hub_cache

REPO = "tiny-org/tiny-qwen3"


@pytest.fixture
def config(redis_url, key_prefix, shared_artifacts):
    return make_config(redis_url, key_prefix, shared_artifacts, extra_catalog=[{"id": REPO}])


@pytest.fixture
def hub(tmp_path, monkeypatch):
    cache = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    return cache


def not_cached(hub) -> str:
    return (f"model {REPO} (revision main) is not in the Hugging Face hub cache at {hub}, and the trainer never "
            f"downloads models; download it into that cache first: hf download {REPO} --cache-dir {hub}")


def requests_for(dataset):
    return [("/v1/runs", {"method": "sft", "model": REPO, "dataset": dataset, "hyperparameters": {"maxSteps": 5}}),
            ("/v1/evaluations", {"model": REPO, "dataset": dataset}),
            ("/v1/endpoints", {"model": REPO})]


def test_listed_while_absent_refused_at_submission(client, admin, dataset, hub):
    listed = client.get(f"/v1/base-models/{REPO}", headers=admin).json
    assert listed["source"] == "hub-cache" and listed["startableRuns"]
    for path, body in requests_for(dataset):
        resp = client.post(path, headers=admin, json=body)
        assert resp.status_code == 400, (path, resp.json)
        assert resp.json["error"]["message"] == not_cached(hub)
        assert resp.json["error"]["details"] == {"field": "model", "model": REPO, "revision": "main",
                                                 "cacheDir": str(hub)}
        assert client.get(path, headers=admin).json["items"] == []  # nothing stored, nothing queued


def test_queued_once_it_is_in_the_cache(client, admin, dataset, hub, shared_artifacts):
    add_to_hub_cache(hub, REPO, ensure_builtin("tiny-qwen3", ArtifactRoot(shared_artifacts)))
    for path, body in requests_for(dataset):
        resp = client.post(path, headers=admin, json=body)
        assert resp.status_code == 201, (path, resp.json)
        doc = resp.json
        assert (doc["plan"]["model"] if path == "/v1/runs" else doc["model"]) == REPO
