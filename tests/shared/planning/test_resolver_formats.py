"""The dataset formats each engine declares (shared/planning/engines.py `dataset_formats`) are what the
resolver accepts: a plan over rows no engine of its method declares is refused with 400 and the
sentence naming the declared formats, through `resolve` and through POST /v1/runs alike; the list
of startable runs, which has no dataset, does not depend on them."""

from __future__ import annotations

import dataclasses
import io
import json

import pytest

from services.api.app import create_app
from shared import reasons
from shared.config.deployment import Node, Pool
from shared.errors import Unprocessable, ValidationFailed
from shared.planning import engines
from shared.planning.resolver import resolve, startable_runs
from tests.conftest import ADMIN_TOKEN, make_config, mark_nodes_alive
from tests.shared.plans.plan_fixtures import typed

TINY = {"id": "builtin/tiny-qwen3", "parameters": 100_000, "precisions": ["fp32", "bf16"],
        "gpuCounts": [1, 2], "modality": "text"}
CPU_POOL = Pool("default", (Node("local", "cpu", 2),))
ROWS = {
    "chat": {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]},
    "completion": {"prompt": "q", "completion": "a"},
    "prompt": {"prompt": "q", "answer": "a"},
}


def plan(method="sft", gpus=1):
    return typed({"method": method, "dataset": "ds-rows", "precision": "fp32", "execution": {"gpus": gpus},
                  **({"grpo": {"klPenalty": 0.0}} if method == "grpo" else {})})


def without_format(monkeypatch, method: str, dataset_format: str) -> None:
    """Declare every engine of `method` as no longer training on `dataset_format`."""
    monkeypatch.setattr(engines, "ENGINES", tuple(
        dataclasses.replace(spec, dataset_formats=spec.dataset_formats - {dataset_format})
        if spec.method == method else spec for spec in engines.ENGINES))


def test_sft_on_prompt_rows_is_refused_with_the_sentence_it_always_had():
    with pytest.raises(ValidationFailed) as refused:
        resolve(plan("sft"), model=TINY, pool=CPU_POOL, dataset_format="prompt")
    assert refused.value.status == 400 and refused.value.details == {"field": "dataset"}
    assert refused.value.message == ("dataset ds-rows holds prompt rows; sft trains on chat messages "
                                     "or prompt and completion rows")
    assert refused.value.message == reasons.dataset_format_refused(
        dataset="ds-rows", dataset_format="prompt", method="sft", trains_on=["chat", "completion"])


@pytest.mark.parametrize("gpus, name", [(1, "sft-single"), (2, "sft-ddp")])
def test_every_declared_format_resolves(gpus, name):
    for spec in engines.ENGINES:
        for dataset_format in spec.dataset_formats:
            accepted = resolve(plan(spec.method, gpus), model=TINY, pool=CPU_POOL, dataset_format=dataset_format)
            assert accepted.method == spec.method and dataset_format in accepted.dataset_formats
    assert resolve(plan("sft", gpus), model=TINY, pool=CPU_POOL, dataset_format="chat").name == name


def test_a_format_removed_from_the_declarations_is_refused(monkeypatch):
    before = startable_runs(TINY, [CPU_POOL])
    assert resolve(plan("grpo"), model=TINY, pool=CPU_POOL, dataset_format="chat").name == "grpo-single"
    without_format(monkeypatch, "grpo", "chat")
    with pytest.raises(ValidationFailed) as refused:
        resolve(plan("grpo"), model=TINY, pool=CPU_POOL, dataset_format="chat")
    assert refused.value.details == {"field": "dataset"}
    assert refused.value.message == ("dataset ds-rows holds chat rows; grpo trains on prompt and completion rows "
                                     "or prompt rows")
    assert resolve(plan("grpo"), model=TINY, pool=CPU_POOL, dataset_format="prompt").name == "grpo-single"
    assert startable_runs(TINY, [CPU_POOL]) == before  # the listing names no dataset


def test_a_format_only_some_engines_of_a_method_declare_picks_those(monkeypatch):
    monkeypatch.setattr(engines, "ENGINES", tuple(
        dataclasses.replace(spec, dataset_formats=frozenset({"chat"})) if spec.name == "sft-ddp" else spec
        for spec in engines.ENGINES))
    assert resolve(plan("sft", 1), model=TINY, pool=CPU_POOL, dataset_format="completion").name == "sft-single"
    with pytest.raises(Unprocessable) as refused:  # a format of the method, not on this GPU count
        resolve(plan("sft", 2), model=TINY, pool=CPU_POOL, dataset_format="completion")
    assert refused.value.message == reasons.engine_refused(method="sft", kl_penalty=0, restores_weights=False, gpus=2)


@pytest.fixture
def api(redis_url, key_prefix, shared_artifacts):
    app = create_app(make_config(redis_url, key_prefix, shared_artifacts))
    context = app.extensions["trainer"]
    mark_nodes_alive(context.redis, context.keys, context.config)
    client, admin = app.test_client(), {"Authorization": f"Bearer {ADMIN_TOKEN}"}

    def upload(dataset_format: str) -> str:
        body = json.dumps(ROWS[dataset_format]).encode() + b"\n"
        resp = client.post("/v1/datasets", headers=admin, data={"file": (io.BytesIO(body), "rows.jsonl")},
                           content_type="multipart/form-data")
        assert resp.status_code == 201 and resp.json["format"] == dataset_format, resp.json
        return resp.json["id"]

    def submit(method: str, dataset: str):
        body = {"method": method, "model": "builtin/tiny-qwen3", "dataset": dataset,
                "hyperparameters": {"maxSteps": 2, "batchSize": 4}}
        if method == "grpo":
            body["grpo"] = {"numGenerations": 2, "rewards": [{"function": "exact_match"}]}
        return client.post("/v1/runs", headers=admin, json=body)

    return upload, submit


def test_the_api_refuses_rows_no_engine_of_the_method_declares(api, monkeypatch):
    upload, submit = api
    prompts = upload("prompt")
    resp = submit("sft", prompts)
    assert resp.status_code == 400
    assert resp.json["error"]["message"] == (f"dataset {prompts} holds prompt rows; sft trains on chat messages "
                                             "or prompt and completion rows")
    assert resp.json["error"]["details"] == {"field": "dataset"}
    chat = upload("chat")
    assert submit("grpo", chat).status_code == 201
    without_format(monkeypatch, "grpo", "chat")
    resp = submit("grpo", chat)
    assert resp.status_code == 400 and resp.json["error"]["details"] == {"field": "dataset"}
    assert resp.json["error"]["message"] == (f"dataset {chat} holds chat rows; grpo trains on prompt and completion "
                                             "rows or prompt rows")
