"""grpo-single over the built-in image-text model (issue 17), for real on the CPU: TRL's GRPOTrainer
reads each prompt's image through the model's processor, rollouts come from a real serving
process asked with the image itself (a chat request: token ids cannot carry pixels), and after
each update the server is handed only the adapter, with the same per-step metrics as for text."""

from __future__ import annotations

import json

import pytest

from services.trainer_worker.engines.distributed import run_distributed
from services.trainer_worker.engines.grpo import load_prompt_rows, run_grpo
from services.trainer_worker.engines.rollouts import RolloutServer
from shared.models.tiny_models import ensure_builtin
from shared.models.tiny_vision_model import SAMPLE_DATASET
from shared.store.artifacts import ArtifactRoot
from tests.shared.plans.plan_fixtures import amended
from tests.trainer_worker.doubles import RecordingReporter
from tests.trainer_worker.engines.test_grpo_engine import POINT_KEYS
from tests.trainer_worker.grpo_doubles import grpo_job

MODEL = "builtin/tiny-gemma3-vision"
STEPS = 10


class CountingServer(RolloutServer):
    """The real rollout server; the test counts the chat requests that carried an image."""

    chats: list[int] = []

    def sample_chat(self, messages, **kwargs):
        parts = [p for m in messages if isinstance(m["content"], list) for p in m["content"]]
        CountingServer.chats.append(sum(p["type"] == "image_url" for p in parts))
        return super().sample_chat(messages, **kwargs)


def question() -> list[dict]:
    return json.loads(SAMPLE_DATASET.read_text().splitlines()[0])["messages"][:1]


def toy_answer(model_dir) -> tuple[str, float]:
    """The untrained model's likeliest visible first answer token to the sample's first picture."""
    import torch

    from shared.models.loading import load_causal_lm, load_processor
    from shared.serving.image_inputs import encode, message_images, pixel_inputs

    processor, model = load_processor(model_dir), load_causal_lm(model_dir, "fp32")
    images = message_images(question())
    encoded = encode(processor, question(), generation_prompt=True, images=images)
    with torch.no_grad():
        logits = model(**{k: torch.tensor([v]) for k, v in encoded.items()}, **pixel_inputs(processor, images)).logits
    probabilities = logits[0, -1].softmax(-1)
    for token in probabilities.argsort(descending=True).tolist():
        text = processor.tokenizer.decode([token], skip_special_tokens=True).strip()
        if text and "\ufffd" not in text:
            return text, float(probabilities[token])
    raise AssertionError("no visible token")


@pytest.fixture(scope="module")
def vision_dir(tmp_path_factory):
    return ensure_builtin("tiny-gemma3-vision", ArtifactRoot(tmp_path_factory.mktemp("artifacts")))


@pytest.fixture(scope="module")
def pictures(vision_dir, tmp_path_factory):
    """8 copies of the sample's first picture, answered with the untrained model's unlikely first guess."""
    answer, probability = toy_answer(vision_dir)
    assert probability < 0.3
    dataset = tmp_path_factory.mktemp("data") / "pictures.jsonl"
    row = {"messages": [*question(), {"role": "assistant", "content": answer}]}
    dataset.write_text("".join(json.dumps(row) + "\n" for _ in range(8)))
    return dataset


@pytest.fixture(scope="module")
def trained(vision_dir, pictures, tmp_path_factory):
    dataset = pictures
    job = grpo_job(vision_dir, tmp_path_factory.mktemp("work"), dataset, maxSteps=STEPS, every_steps=STEPS,
                   learningRate=0.05)
    job.plan = amended(job.plan, {"model": MODEL})
    reporter = RecordingReporter()
    CountingServer.chats.clear()
    return job, reporter, run_grpo(job, reporter, rollout_server=CountingServer)


def test_prompts_keep_their_images_for_trl(tmp_path):
    rows = load_prompt_rows(SAMPLE_DATASET)
    assert len(rows) == 64 and rows[0]["answer"] == "red"
    assert rows[0]["prompt"][0]["content"][0] == {"type": "image"} and len(rows[0]["images"]) == 1
    assert rows[0]["images"][0].size == (32, 32)


def test_the_reward_rises_with_rollouts_that_read_the_image(trained):
    job, reporter, result = trained
    rewards = [p["reward"] for p in reporter.points]
    assert result.final_step == STEPS and len(rewards) == STEPS
    # from none in 16 to about 1 in 3 (on 2 CPU cores: 0.075 over the first five steps, 0.33 over the last)
    assert rewards[0] < 0.15 and sum(rewards[5:]) / 5 > sum(rewards[:5]) / 5 + 0.1, rewards
    # one chat request per prompt group of every step, each with its picture
    assert CountingServer.chats == [1] * STEPS


def test_only_the_adapter_is_handed_off_with_the_same_metrics_as_text(trained):
    job, reporter, _ = trained
    adapter_bytes = sum(f.stat().st_size for f in (job.snapshot_dir(STEPS) / "adapter").iterdir())
    assert reporter.points[0]["handoffBytes"] == 0
    for point in reporter.points:
        assert set(point) == POINT_KEYS
        assert point["generationSeconds"] > 0 and point["updateSeconds"] > 0
    for point in reporter.points[1:]:
        assert point["handoffBytes"] == adapter_bytes and point["handoffSeconds"] > 0
    assert [(s["step"], s["final"]) for s in reporter.snapshots] == [(STEPS, True)]
    assert reporter.snapshots[-1]["manifest"]["model"] == MODEL


def test_two_slots_ask_each_rollout_server_with_its_pictures_and_hand_off_the_adapter(vision_dir, pictures, tmp_path):
    """grpo-ddp over the image-text model: two real ranks joined by gloo, each with its own rollout
    server, handed only the adapter after each update, as on one slot."""
    job = grpo_job(vision_dir, tmp_path, pictures, maxSteps=2, every_steps=2, learningRate=0.05)
    job.plan = amended(job.plan, {"model": MODEL, "execution": {"gpus": 2}})
    job.devices, job.engine = ["cpu:0", "cpu:1"], "grpo-ddp"
    reporter = RecordingReporter()
    result = run_distributed(job, reporter)
    adapter_bytes = sum(f.stat().st_size for f in (job.snapshot_dir(2) / "adapter").iterdir())
    assert result.final_step == 2
    assert reporter.what_trains().startswith(f"training {MODEL} with grpo on 8 prompts on cpu:0, cpu:1: ")
    assert [set(p) == POINT_KEYS for p in reporter.points] == [True, True]
    assert reporter.points[0]["handoffBytes"] == 0 and reporter.points[1]["handoffBytes"] == adapter_bytes
    assert sorted(p.name for p in (job.work_dir / "rollouts").iterdir()) == ["rank-0", "rank-1"]
    assert [(s["step"], s["manifest"]["gpus"], s["manifest"]["engine"]) for s in reporter.snapshots] == [
        (2, 2, "grpo-ddp")]
