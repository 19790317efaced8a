"""The serving backends' command lines. vLLM is not installed on the CPU machines that run these
tests: its command line is checked here, and the process itself only on a GPU node."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from shared.config import Node
from shared.load_spec import LoadSpec
from shared.serving import backends
from shared.serving.backends import BuiltinBackend, VllmBackend, choose_backend

SPEC = LoadSpec(model="Qwen/Qwen3-8B", model_dir="/models/qwen3-8b", dtype="bf16",
                generation_config={"do_sample": True, "temperature": 0.6, "top_p": 0.95, "top_k": 20},
                batch_invariant=True, served_model_name="ep-1", adapters={"snap-1": "/snaps/snap-1"}, device="cuda")


def test_builtin_command():
    argv, env = BuiltinBackend(devices=["cpu:0"]).command(SPEC, port=8123, spec_path=Path("/w/spec.json"),
                                                          endpoint_id="ep-1")
    assert argv == [sys.executable, "-m", "shared.serving.server", "--host", "127.0.0.1", "--port", "8123",
                    "--load-spec", "/w/spec.json", "--endpoint-id", "ep-1"]
    assert env == {"CUDA_VISIBLE_DEVICES": "", "OMP_WAIT_POLICY": "PASSIVE"}
    _, cuda_env = BuiltinBackend(devices=["cuda:2"]).command(SPEC, port=1, spec_path=Path("s"))
    assert cuda_env == {"CUDA_VISIBLE_DEVICES": "2", "CUBLAS_WORKSPACE_CONFIG": ":4096:8"}


def test_on_cpu_slots_the_builtin_server_computes_with_the_grants_share_of_the_cores(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    node = Node("n", "cpu", 4)
    assert [node.cpu_threads(slots) for slots in (1, 2, 4)] == [4, 8, 16]
    assert Node("small", "cpu", 4).cpu_threads() == 4 and Node("n", "cpu", 32).cpu_threads() == 1  # never 0
    _, env = choose_backend(["cpu:0", "cpu:1"], cpu_threads=node.cpu_threads(2)).command(SPEC, port=1, spec_path=Path("s"))
    assert env["OMP_NUM_THREADS"] == "8"
    monkeypatch.setattr(backends, "vllm_installed", lambda: False)  # a GPU grant computes on its GPUs
    _, cuda_env = choose_backend(["cuda:0"], cpu_threads=8).command(SPEC, port=1, spec_path=Path("s"))
    assert "OMP_NUM_THREADS" not in cuda_env


def test_vllm_command(tmp_path):
    adapter = tmp_path / "snap-1"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"r": 128}))
    spec = LoadSpec.from_dict({**SPEC.to_dict(), "adapters": {"snap-1": str(adapter)}})
    argv, env = VllmBackend(devices=["cuda:1", "cuda:3"], compute_capability=(9, 0)).command(
        spec, port=9000, spec_path=Path("/w/spec.json"))
    assert argv[:3] == ["vllm", "serve", "/models/qwen3-8b"]
    assert "--enable-lora" in argv
    options = {a: argv[i + 1] for i, a in enumerate(argv) if a.startswith("--") and a != "--enable-lora"}
    assert options == {
        "--host": "127.0.0.1", "--port": "9000", "--served-model-name": "ep-1", "--dtype": "bfloat16",
        "--tensor-parallel-size": "2", "--generation-config": "auto", "--seed": "0", "--max-lora-rank": "128",
        "--override-generation-config": json.dumps({"max_new_tokens": 1024, "temperature": 0.6, "top_k": 20, "top_p": 0.95},
                                                   sort_keys=True),
        "--lora-modules": f"snap-1={adapter}",
    }
    assert env == {"CUDA_VISIBLE_DEVICES": "1,3", "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True", "VLLM_BATCH_INVARIANT": "1"}


def test_vllm_tells_a_greedy_model_temperature_zero():
    greedy = LoadSpec.from_dict({**SPEC.to_dict(), "generationConfig": {"do_sample": False, "max_new_tokens": 64},
                                 "adapters": {}, "batchInvariant": False})
    argv, env = VllmBackend(devices=["cuda:0"]).command(greedy, port=1, spec_path=Path("s"))
    overrides = json.loads(argv[argv.index("--override-generation-config") + 1])
    assert overrides == {"temperature": 0.0, "max_new_tokens": 64}
    assert "--lora-modules" not in argv and argv[argv.index("--max-lora-rank") + 1] == "64"
    assert "VLLM_BATCH_INVARIANT" not in env


@pytest.mark.parametrize(
    ("devices", "installed", "expected"),
    [(["cuda:0"], True, "vllm"), (["cuda:0"], False, "builtin"), (["cpu:0"], True, "builtin"), ([], True, "builtin")],
)
def test_choose_backend(monkeypatch, devices, installed, expected):
    monkeypatch.setattr(backends, "vllm_installed", lambda: installed)
    chosen = choose_backend(devices)
    assert chosen.name == expected and chosen.devices == devices


@pytest.mark.parametrize(("capability", "invariant"), [((9, 0), True), ((10, 0), True), ((8, 9), False),
                                                       ((8, 0), False), (None, False)])
def test_batch_invariant_mode_only_on_compute_capability_9_and_above(capability, invariant):
    _, env = VllmBackend(devices=["cuda:0"], compute_capability=capability).command(SPEC, port=1, spec_path=Path("s"))
    assert ("VLLM_BATCH_INVARIANT" in env) is invariant and SPEC.batch_invariant


def test_a_rollout_server_is_told_its_share_of_the_gpu_and_its_longest_sequence():
    argv, _ = VllmBackend(devices=["cuda:0"], gpu_memory_utilization=0.37, max_model_len=1088).command(
        SPEC, port=1, spec_path=Path("s"))
    assert argv[argv.index("--gpu-memory-utilization") + 1] == "0.37"
    assert argv[argv.index("--max-model-len") + 1] == "1088"
    alone, _ = VllmBackend(devices=["cuda:0"]).command(SPEC, port=1, spec_path=Path("s"))
    assert "--gpu-memory-utilization" not in alone and "--max-model-len" not in alone
