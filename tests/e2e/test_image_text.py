"""Image-text models through every real service (issue 17): the bundled image-text sample uploaded,
an SFT run over the built-in image-text model, an endpoint over its snapshot answering chat with
image_url parts through the trainer's proxy (the official openai client, streamed and not), and
evaluations of the base and the snapshot scoring the sample."""

from __future__ import annotations

import json

import openai
import pytest
from openai import OpenAI

from shared import reasons
from shared.models.tiny_vision_model import SAMPLE_DATASET
from tests.e2e.stack import start_stack, stop_stack
from tests.e2e.test_endpoints import phase_is
from tests.e2e.test_run_through_services import wait_terminal

MODEL = "builtin/tiny-gemma3-vision"
EVAL_ROWS = 8


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_url):
    stack = start_stack(tmp_path_factory.mktemp("image-text"), redis_url, endpoint_manager=True,
                        extra_models=({"id": MODEL, "builtin": "tiny-gemma3-vision"},))
    yield stack
    stop_stack(stack)


@pytest.fixture(scope="module")
def dataset(stack) -> dict:
    resp = stack.post("/v1/datasets", files={"file": ("shapes.jsonl", SAMPLE_DATASET.read_bytes())})
    assert resp.status_code == 201, resp.text
    return resp.json()


@pytest.fixture(scope="module")
def snapshot(stack, dataset) -> str:
    run = stack.post("/v1/runs", json={"model": MODEL, "dataset": dataset["id"],
                                       "hyperparameters": {"maxSteps": 32, "learningRate": 0.02}}).json()
    done = wait_terminal(stack, run["id"])
    assert done["status"] == "SUCCEEDED", (done, stack.get(f"/v1/runs/{run['id']}/events").json())
    assert done["progress"]["loss"] < done["progress"]["firstLoss"]
    return done["latestSnapshot"]


def sample_rows() -> list[dict]:
    return [json.loads(line) for line in SAMPLE_DATASET.read_text().splitlines()]


def test_an_endpoint_over_an_image_text_snapshot_answers_image_chat_through_the_trainer(stack, dataset, snapshot):
    assert dataset["modality"] == "image-text"
    ep = stack.post("/v1/endpoints", json={"model": MODEL, "snapshot": snapshot, "name": "shapes",
                                           "idleTimeout": 0}).json()
    ready = stack.wait_until("READY", lambda: phase_is(stack, ep["id"], "READY", "FAILED"), timeout_s=180)
    assert ready["phase"] == "READY", (ready, stack.get(f"/v1/endpoints/{ep['id']}/logs").json())

    question = sample_rows()[0]["messages"][:1]  # a red shape, "What colour is the shape?"
    client = OpenAI(base_url=f"{stack.api_url}/v1", api_key=stack.token, max_retries=0, timeout=60)
    whole = client.chat.completions.create(model="shapes", messages=question, max_tokens=6, temperature=0)
    assert whole.model == "shapes" and whole.choices[0].message.content == "red"
    green = sample_rows()[1]["messages"][:1]  # the same question of another picture: the model reads it
    assert client.chat.completions.create(model="shapes", messages=green, max_tokens=6,
                                          temperature=0).choices[0].message.content == "green"
    assert whole.usage.prompt_tokens > 16  # the image's soft tokens are counted with the words
    streamed = list(client.chat.completions.create(model="shapes", messages=question, max_tokens=6, temperature=0,
                                                   stream=True, stream_options={"include_usage": True}))
    assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == whole.choices[0].message.content
    assert streamed[-1].usage.prompt_tokens == whole.usage.prompt_tokens

    # the same answer as the serving process gives straight, under the snapshot's adapter
    direct = OpenAI(base_url=f"{ready['address']}/v1", api_key=stack.serving_key(ep["id"])["Authorization"].split()[1],
                    max_retries=0, timeout=60)
    assert direct.chat.completions.create(model=ep["id"], messages=question, max_tokens=6,
                                          temperature=0).choices[0].message.content == whole.choices[0].message.content

    # a part the model cannot read is the serving process's 400, relayed in the API's error shape
    bad = [{"role": "user", "content": [{"type": "text", "text": "What colour is the shape?"},
                                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="shapes", messages=bad, max_tokens=4)
    error = refused.value.body
    assert error["message"] == reasons.request_part_refused("messages[0].content[1].image_url.url",
                                                            "is not an image Pillow can decode")
    assert error["code"] == "invalid" and error["details"]["endpoint"] == ep["id"]


def evaluated(stack, body: dict) -> dict:
    ev = stack.post("/v1/evaluations", json=body)
    assert ev.status_code == 201, ev.text
    done = stack.wait_until("the evaluation to end", lambda: (lambda d: d if d["status"] in (
        "SUCCEEDED", "FAILED", "CANCELLED") else None)(stack.get(f"/v1/evaluations/{ev.json()['id']}").json()),
        timeout_s=240)
    assert done["status"] == "SUCCEEDED", (done, stack.get(f"/v1/evaluations/{done['id']}/events").json())
    return done


def test_evaluations_score_the_image_text_sample_base_and_snapshot(stack, snapshot):
    data = "".join(json.dumps(row) + "\n" for row in sample_rows()[:EVAL_ROWS]).encode()
    scored = stack.post("/v1/datasets", files={"file": ("shapes-eval.jsonl", data)}).json()["id"]
    base = evaluated(stack, {"model": MODEL, "dataset": scored, "maxTokens": 4})
    tuned = evaluated(stack, {"model": MODEL, "snapshot": snapshot, "dataset": scored, "maxTokens": 4})
    for done in (base, tuned):
        assert done["metrics"]["rows"] == EVAL_ROWS and done["metrics"]["targetTokens"] >= 2 * EVAL_ROWS
    assert tuned["metrics"]["loss"] < base["metrics"]["loss"] - 1.0, (base["metrics"], tuned["metrics"])
    # 32 steps teach it to tell the four colours apart (1.0 on this machine); the base says none of them
    assert base["metrics"]["exactMatch"] == 0 and tuned["metrics"]["exactMatch"] >= 0.75, tuned["metrics"]
    rows = [json.loads(line) for line in stack.get(f"/v1/evaluations/{tuned['id']}/rows").text.splitlines()]
    # the evaluation reads the image as the endpoint does: the same greedy answer to the same row
    assert rows[0]["prompt"] == sample_rows()[0]["messages"][:1] and rows[0]["completion"] == "red"
