"""What command line a colocated grpo run's rollout server gets on a CUDA GPU (engines/rollout_sizes.py).

No vLLM and no CUDA here: `vllm_installed`, the device's compute capability and its memory are
stood in for (each by a fixed answer a CUDA node with vLLM would give); the command is the real
`VllmBackend.command` of the real `RolloutServer`, over the built-in tiny model's own config.
"""

from __future__ import annotations

import copy
import json
import math

import pytest

from services.trainer_worker.engines import rollout_sizes
from services.trainer_worker.engines.rollouts import RolloutServer
from shared.errors import WorkFailed
from shared.gpu_share import max_model_len, rollout_server_gib
from shared.resolver import trainer_memory_gib
from shared.serving import backends
from tests.shared.plan_fixtures import typed
from tests.trainer_worker.grpo_doubles import GRPO_PLAN

PARAMETERS = 2_500_000  # what the server is told the base model has


def on_a_cuda_node(monkeypatch, *, device_gib: float, capability=(9, 0)):
    monkeypatch.setattr(backends, "vllm_installed", lambda: True)
    monkeypatch.setattr(backends, "cuda_capability", lambda devices: capability)
    monkeypatch.setattr(rollout_sizes, "device_memory_gib", lambda: device_gib)


def server(model_dir, tmp_path, plan: dict, devices=("cuda:0",)) -> RolloutServer:
    return RolloutServer(model="builtin/tiny-qwen3", model_dir=model_dir, precision=typed(plan).precision,
                         devices=list(devices), work_dir=tmp_path, port=8123, plan=typed(plan))


def command(rollouts: RolloutServer) -> tuple[list[str], dict[str, str]]:
    spec = rollouts._spec({"policy-0": "/adapters/policy-0"}, adapter_mode="unmerged")
    return rollouts.backend(parameters=PARAMETERS).command(spec, port=rollouts.port, spec_path=rollouts.work_dir / "s",
                                                           api_key="k")


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_on_cpu_slots_the_server_computes_with_the_trainers_threads(model_dir, tmp_path):
    """The trainer and its rollout server take turns on the grant's cores (node_worker.use_granted_devices
    set the trainer's threads to that share); the server is given as many."""
    import torch

    before = torch.get_num_threads()
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            _, env = command(server(model_dir, tmp_path, GRPO_PLAN, devices=("cpu:0",)))
            assert env["OMP_NUM_THREADS"] == str(threads)
    finally:
        torch.set_num_threads(before)


def test_vllm_waits_for_the_trainers_model_and_the_builtin_server_does_not(model_dir, tmp_path, monkeypatch):
    on_a_cuda_node(monkeypatch, device_gib=4.0)
    rollouts = server(model_dir, tmp_path, GRPO_PLAN)
    assert rollouts.launch_early() is False and rollouts.proc is None  # sized by the model: started in start()


def test_vllm_takes_the_share_the_trainer_leaves_free_and_serves_prompt_plus_completion(model_dir, tmp_path,
                                                                                        monkeypatch):
    on_a_cuda_node(monkeypatch, device_gib=4.0)
    plan = copy.deepcopy(GRPO_PLAN)
    plan["grpo"]["maxCompletionLength"] = 64
    argv, env = command(server(model_dir, tmp_path, plan))

    config = json.loads((model_dir / "config.json").read_text())
    model = {"parameters": PARAMETERS, "hiddenSize": config["hidden_size"], "layers": config["num_hidden_layers"],
             "vocabSize": config["vocab_size"], "intermediateSize": config["intermediate_size"]}
    trainer = trainer_memory_gib(typed(plan), model=model)
    share = math.floor((4.0 - trainer) / 4.0 * 100) / 100
    assert argv[:2] == ["vllm", "serve"]
    assert flag(argv, "--gpu-memory-utilization") == f"{share:.2f}"
    assert 0 < share < 0.9  # the trainer's part is left to it, not vLLM's default 0.9
    assert flag(argv, "--max-model-len") == "320"  # maxSeqLength 256 + maxCompletionLength 64
    assert flag(argv, "--dtype") == "float32"
    assert env["CUDA_VISIBLE_DEVICES"] == "0" and env["VLLM_BATCH_INVARIANT"] == "1"


def test_the_max_model_len_is_bounded_by_the_models_max_positions(model_dir, tmp_path, monkeypatch):
    on_a_cuda_node(monkeypatch, device_gib=80.0, capability=(8, 0))
    plan = copy.deepcopy(GRPO_PLAN)
    plan["hyperparameters"]["maxSeqLength"] = 2000
    plan["grpo"]["maxCompletionLength"] = 512
    positions = json.loads((model_dir / "config.json").read_text())["max_position_embeddings"]
    argv, env = command(server(model_dir, tmp_path, plan))
    assert positions < 2512 and flag(argv, "--max-model-len") == str(positions)
    assert max_model_len(typed(plan)) == 2512
    assert "VLLM_BATCH_INVARIANT" not in env  # compute capability 8.0: not supported


def test_a_gpu_the_trainer_leaves_too_little_of_is_refused_with_its_sentence(model_dir, tmp_path, monkeypatch):
    plan = copy.deepcopy(GRPO_PLAN)
    config = json.loads((model_dir / "config.json").read_text())
    server_gib = rollout_server_gib(typed(plan), parameters=PARAMETERS, hidden=config["hidden_size"],
                                    layers=config["num_hidden_layers"], vocab=config["vocab_size"])
    on_a_cuda_node(monkeypatch, device_gib=1.0)
    model = {"parameters": PARAMETERS, "hiddenSize": config["hidden_size"], "layers": config["num_hidden_layers"],
             "vocabSize": config["vocab_size"], "intermediateSize": config["intermediate_size"]}
    free = 1.0 - trainer_memory_gib(typed(plan), model=model)
    with pytest.raises(WorkFailed) as refused:
        command(server(model_dir, tmp_path, plan))
    assert str(refused.value) == (f"the trainer leaves {free:.1f} GiB of 1.0 GiB free, "
                                  f"and the rollout server needs {server_gib:.1f} GiB")


def test_cpu_slots_and_endpoints_keep_their_commands(model_dir, tmp_path, monkeypatch):
    on_a_cuda_node(monkeypatch, device_gib=16.0)
    argv, _ = command(server(model_dir, tmp_path, copy.deepcopy(GRPO_PLAN), devices=["cpu:0"]))
    assert argv[1:3] == ["-m", "shared.serving.server"]  # the built-in server: no memory share to set
    no_plan = server(model_dir, tmp_path, GRPO_PLAN)
    no_plan.plan = None
    argv, _ = command(no_plan)
    assert "--gpu-memory-utilization" not in argv and "--max-model-len" not in argv


def test_the_models_facts_come_from_its_config_an_image_text_one_nested(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"text_config": {
        "hidden_size": 64, "num_hidden_layers": 3, "vocab_size": 300, "max_position_embeddings": 512}}))
    facts = rollout_sizes.model_facts(tmp_path, parameters=10)
    assert {k: facts[k] for k in ("parameters", "hiddenSize", "layers", "vocabSize", "maxPositions")} == {
        "parameters": 10, "hiddenSize": 64, "layers": 3, "vocabSize": 300, "maxPositions": 512}
