"""Whether an sft run recomputes activations (engines/kit.py `activation_checkpointing`): never on
CPU; on CUDA only when the resolver's memory estimate without checkpointing does not fit 0.8 of the
GPU. The CUDA decision is exercised through its pure part (`keeps_activations`, with the GPU's
memory as a number): no GPU here."""

from __future__ import annotations

import pytest

from services.trainer_worker.engines.kit import (
    KEEP_ACTIVATIONS_SHARE,
    activation_checkpointing,
    keeps_activations,
    model_facts,
    trainer_arguments,
)
from services.trainer_worker.engines.sft import sft_config
from shared import reasons
from shared.artifacts import ArtifactRoot
from shared.models import load_causal_lm
from shared.resolver import CUDA, GIB, MARGIN, layer_activation_bytes, trainer_memory_gib, training_memory_gib
from shared.tiny_models import builtin_facts, ensure_builtin
from tests.shared.plan_fixtures import typed
from tests.trainer_worker.doubles import make_job

# The published Qwen3-8B shape (what bench/gpu_qwen3_8b.py builds)
QWEN3_8B = {"parameters": 8_190_735_360, "hiddenSize": 4096, "layers": 36, "vocabSize": 151936}


def plan(batch: int, *, precision: str = "bf16", seq: int = 2048) -> dict:
    return {"method": "sft", "precision": precision, "execution": {"gpus": 1},
            "adapter": {"rank": 16, "alpha": 32, "targetModules": "all-linear"},
            "hyperparameters": {"batchSize": batch, "gradientAccumulation": 1, "maxSeqLength": seq}}


def test_without_checkpointing_every_layer_keeps_what_one_recomputed_layer_keeps():
    with_it, without = (trainer_memory_gib(typed(plan(2)), model=QWEN3_8B, activation_checkpointing=c) for c in (True, False))
    tokens, hidden, layers, bf16 = 2 * 2048, 4096, 36, 2
    per_layer = bf16 * (22 * hidden + 4 * 3 * hidden)  # 22 hidden-sized and 4 FFN-sized (3 x hidden) tensors
    assert per_layer == layer_activation_bytes(typed(plan(2)), hidden=hidden, intermediate=3 * hidden)
    kept_with = layers * hidden * bf16 + per_layer  # each layer's input, and one layer recomputed
    assert (without - with_it) * GIB == pytest.approx(tokens * (layers * per_layer - kept_with) * (1 + MARGIN))


def test_the_decision_and_the_runs_estimate_are_one_number():
    """A CUDA sft run keeps its activations when the estimate without them fits: the estimate it then
    reports (engines/kit.py report_memory_estimate) is that very number."""
    keep, needs = keeps_activations(typed(plan(2)), QWEN3_8B, gpu_gib=139.8)
    assert keep and needs == training_memory_gib(typed(plan(2)), model=QWEN3_8B, device=CUDA,
                                                 activation_checkpointing=False)


def test_an_8b_lora_keeps_its_activations_where_the_estimate_fits_the_gpu():
    keep, needs = keeps_activations(typed(plan(2)), QWEN3_8B, gpu_gib=139.8)  # an H200
    assert keep and needs == trainer_memory_gib(typed(plan(2)), model=QWEN3_8B, activation_checkpointing=False)
    assert 70 < needs < 85
    # the same plan on a 40 GiB GPU recomputes; so does a batch of 16 on the H200
    assert keeps_activations(typed(plan(2)), QWEN3_8B, gpu_gib=40.0)[0] is False
    assert keeps_activations(typed(plan(16)), QWEN3_8B, gpu_gib=139.8)[0] is False
    # the boundary: the estimate against the share of the GPU
    assert keeps_activations(typed(plan(2)), QWEN3_8B, gpu_gib=needs / KEEP_ACTIVATIONS_SHARE)[0] is True
    assert keeps_activations(typed(plan(2)), QWEN3_8B, gpu_gib=needs / KEEP_ACTIVATIONS_SHARE - 0.01)[0] is False


def test_a_plan_stored_without_a_precision_is_estimated_in_the_schemas_default():
    sparse = plan(2)
    del sparse["precision"]
    assert keeps_activations(typed(sparse), QWEN3_8B, gpu_gib=139.8)[1] == keeps_activations(
        typed({**plan(2), "precision": "fp32"}), QWEN3_8B, gpu_gib=139.8)[1]


def test_the_facts_of_a_loaded_model_are_its_catalog_facts(tmp_path):
    model_dir = ensure_builtin("tiny-qwen3", ArtifactRoot(tmp_path / "a"))
    facts = model_facts(load_causal_lm(model_dir, "fp32"))
    assert facts["parameters"] == builtin_facts("tiny-qwen3")["parameters"]
    assert (facts["hiddenSize"], facts["layers"], facts["vocabSize"]) == (64, 2, 512)


def test_a_cpu_run_never_checkpoints_and_says_nothing_about_it(tmp_path):
    job = make_job(tmp_path, tmp_path / "work")
    assert activation_checkpointing(job, model=None) == (False, None)
    assert trainer_arguments(job)["activation_checkpointing"] is False
    # the choice reaches the TRL config as made (a CUDA run's, forced here)
    assert sft_config(job, checkpointing=True).activation_checkpointing is True
    assert sft_config(job, checkpointing=False).activation_checkpointing is False


def test_the_event_says_which_and_why_word_for_word():
    assert reasons.activation_checkpointing_chosen(on=False, needs_gib=52.04, gpu_gib=139.8, share=0.8) == (
        "activation checkpointing off: the memory estimate without it, 52.0 GiB, fits in 80% of the GPU's 139.8 GiB")
    assert reasons.activation_checkpointing_chosen(on=True, needs_gib=52.04, gpu_gib=40.0, share=0.8) == (
        "activation checkpointing on: the memory estimate without it, 52.0 GiB, exceeds 80% of the GPU's 40.0 GiB")
