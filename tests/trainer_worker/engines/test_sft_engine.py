"""The sft-single engine trains the built-in tiny model for real, on the CPU, through TRL + PEFT."""

from __future__ import annotations

import json
import math

import pytest
import torch
from peft import PeftModel
from safetensors.torch import load_file

from services.trainer_worker.engines.base import checkpoint_from_snapshot
from services.trainer_worker.engines.sft import load_rows, run_sft
from shared.errors import WorkFailed
from shared.models.loading import load_causal_lm, load_tokenizer
from shared.snapshots.files import record
from tests.shared.plans.plan_fixtures import amended
from tests.trainer_worker.doubles import RecordingReporter, make_job


@pytest.fixture(scope="module")
def trained(model_dir, tmp_path_factory):
    reporter = RecordingReporter()
    job = make_job(model_dir, tmp_path_factory.mktemp("work"))
    return job, reporter, run_sft(job, reporter)


def test_training_lowers_the_loss(trained):
    _, reporter, result = trained
    losses = [p["loss"] for p in reporter.points]
    assert reporter.total_steps == 30 and len(losses) == 30 and result.final_step == 30
    first, last = sum(losses[:3]) / 3, sum(losses[-3:]) / 3
    assert last < first - 1.0, losses
    assert result.first_loss == losses[0] and result.last_loss == losses[-1] and not result.stopped_early


def test_metric_points(trained):
    _, reporter, _ = trained
    assert [p["step"] for p in reporter.points] == list(range(1, 31))
    for point in reporter.points:
        assert set(point) == {"step", "loss", "learningRate", "gradNorm", "tokensPerSecond", "epoch"}
        assert point["tokensPerSecond"] > 0 and point["gradNorm"] > 0
    assert reporter.points[0]["learningRate"] == pytest.approx(0.002)
    assert reporter.points[-1]["epoch"] == pytest.approx(30 * 8 / 256)


def test_the_first_events_say_when_the_model_was_loaded_and_then_what_trains(trained):
    _, reporter, _ = trained
    messages = [message for _, message in reporter.events]
    loaded = next(i for i, m in enumerate(messages) if m.startswith("loaded "))
    assert messages[loaded].startswith("loaded builtin/tiny-qwen3 (") and "parameters, fp32) in " in messages[loaded]
    assert loaded < next(i for i, m in enumerate(messages) if m.startswith("training builtin/tiny-qwen3 on "))


def test_snapshots_every_n_steps_and_at_the_end(trained):
    job, reporter, _ = trained
    assert [(s["step"], s["final"]) for s in reporter.snapshots] == [(10, False), (20, False), (30, True)]
    assert sorted(p.name for p in job.snapshots_dir.iterdir()) == ["step-000010", "step-000020", "step-000030"]
    directory = reporter.snapshots[-1]["directory"]
    assert directory == job.work_dir / "snapshots" / "step-000030"
    manifest = json.loads((directory / "snapshot.json").read_text())
    assert manifest == reporter.snapshots[-1]["manifest"]
    assert manifest == {
        "layout": 2, "run": "run-test", "step": 30, "method": "sft", "engine": "sft-single",
        "precision": "fp32", "model": "builtin/tiny-qwen3", "gpus": 1, "release": "0.6.0",
        "weights": {"format": "peft-safetensors", "path": "adapter"},
        "trainingState": {"format": "hf-trainer", "path": "training_state"},
        "files": record(directory),  # every file with its size and sha256: an import is held to them
    }
    assert sorted(p.name for p in (directory / "adapter").iterdir()) == [
        "adapter_config.json", "adapter_model.safetensors",
    ]
    state = directory / "training_state"
    for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth", "trainer_state.json"):
        assert (state / name).is_file(), name
    assert json.loads((state / "trainer_state.json").read_text())["global_step"] == 30


def test_a_snapshot_rebuilds_an_hf_checkpoint(trained, tmp_path):
    _, reporter, _ = trained
    checkpoint = checkpoint_from_snapshot(reporter.snapshots[1]["directory"], tmp_path / "checkpoint-20")
    for name in ("adapter_model.safetensors", "adapter_config.json", "optimizer.pt", "scheduler.pt", "trainer_state.json"):
        assert (checkpoint / name).is_file(), name


def test_adapter_loads_over_the_base_and_generates(trained, model_dir):
    _, reporter, _ = trained
    base = load_causal_lm(model_dir, "fp32")
    before = {k: v.clone() for k, v in base.state_dict().items()}
    model = PeftModel.from_pretrained(base, reporter.snapshots[-1]["directory"] / "adapter")
    lora = {k: v for k, v in model.state_dict().items() if "lora_B" in k}
    assert lora and any(v.abs().sum() > 0 for v in lora.values())  # B starts at zero: it trained
    tokenizer = load_tokenizer(model_dir)
    inputs = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Reverse: abc"}], add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    out = model.generate(**inputs, max_new_tokens=6)
    assert out.shape[1] > inputs["input_ids"].shape[1]
    assert all(torch.equal(before[k], v) for k, v in load_causal_lm(model_dir, "fp32").state_dict().items())


def test_identical_jobs_give_identical_adapters(model_dir, tmp_path):
    adapters = []
    for name in ("a", "b"):
        job = make_job(model_dir, tmp_path / name, maxSteps=4)
        run_sft(job, RecordingReporter())
        adapters.append(load_file(job.snapshot_dir(4) / "adapter" / "adapter_model.safetensors"))
    a, b = adapters
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_cancel_stops_at_the_next_step_without_a_final_snapshot(model_dir, tmp_path):
    reporter = RecordingReporter(stop_after_step=2)  # seen by the engine at the end of step 3
    job = make_job(model_dir, tmp_path, maxSteps=30, every_steps=2)
    result = run_sft(job, reporter)
    assert result.stopped_early and result.final_step == 3
    assert [(s["step"], s["final"]) for s in reporter.snapshots] == [(2, False)]
    assert [p.name for p in job.snapshots_dir.iterdir()] == ["step-000002"]
    assert any("cancelled" in message for _, message in reporter.events)


def test_prompt_completion_rows_train(model_dir, tmp_path):
    dataset = tmp_path / "pc.jsonl"
    dataset.write_text("".join(json.dumps({"prompt": f"Add: {i} + 1 =", "completion": f" {i + 1}"}) + "\n" for i in range(16)))
    job = make_job(model_dir, tmp_path / "work", dataset=dataset, maxSteps=2)
    result = run_sft(job, RecordingReporter())
    assert result.final_step == 2 and (job.snapshot_dir(2) / "adapter" / "adapter_model.safetensors").is_file()


def test_bad_rows_are_refused_naming_the_line(tmp_path):
    dataset = tmp_path / "bad.jsonl"
    dataset.write_text('{"messages": []}\n{"text": "x"}\n')
    with pytest.raises(WorkFailed, match="dataset line 2 has neither messages nor prompt and completion"):
        load_rows(dataset)


@pytest.mark.requires_cuda
def test_fp16_mixed_precision_trains_on_cuda(model_dir, tmp_path):
    # fp16 mixed precision exists only on CUDA (the HF Trainer refuses it on a CPU), so this is the
    # one engine path the CPU tests cannot reach; bench/gpu_check.py's sft-fp16 runs it on its own model
    reporter = RecordingReporter()
    job = make_job(model_dir, tmp_path, maxSteps=6)
    job.plan = amended(job.plan, {"precision": "fp16"})
    job.devices = ["cuda:0"]
    result = run_sft(job, reporter)
    losses = [p["loss"] for p in reporter.points]
    assert result.final_step == 6 and len(losses) == 6 and all(math.isfinite(x) for x in losses), losses
    assert (job.snapshot_dir(6) / "adapter" / "adapter_model.safetensors").is_file()
