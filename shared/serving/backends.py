"""The two serving backends behind one HTTP surface (vLLM's OpenAI-compatible server).

A backend only says how to start a serving process for a load spec: its argv and the environment
variables to add. Both answer `GET /health`, `/v1/models`, `/v1/completions`,
`/v1/chat/completions`, `/v1/load_lora_adapter` and `/v1/unload_lora_adapter` the same way, so the
endpoint manager and the API's proxy never ask which one runs.

- `VllmBackend`: `vllm serve` on CUDA GPUs, where vLLM is installed.
- `BuiltinBackend`: `shared.serving.server` (transformers) everywhere else.

The spec file at `spec_path` is written by the caller (`LoadSpec.write`) before the process starts.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from shared.gpu_share import batch_invariant_supported
from shared.load_spec import LoadSpec, sampling_defaults
from shared.models import PRECISION_DTYPES

# vLLM's --max-lora-rank accepts only these; the smallest one that fits every known adapter is used.
VLLM_LORA_RANKS = (8, 16, 32, 64, 128, 256, 320, 512)
VLLM_MIN_LORA_RANK = 64  # room for adapters loaded at run time, whose rank is not known at start


class Backend(Protocol):
    name: str  # "vllm" or "builtin"

    def command(
        self, spec: LoadSpec, *, port: int, spec_path: Path, host: str = "127.0.0.1", endpoint_id: str | None = None,
        api_key: str | None = None,
    ) -> tuple[list[str], dict[str, str]]:
        """The serving process's argv and the environment variables to add to the caller's. With
        `api_key`, the process answers only requests that carry it as their bearer token (it is
        passed in the environment: a command line is readable by every local user)."""
        ...


def _cuda_visible(devices: list[str]) -> str:
    """"cuda:0", "cuda:3" -> "0,3" (the node's device names, SPEC 2.7)."""
    return ",".join(d.split(":", 1)[1] if ":" in d else d for d in devices)


def _is_cuda(devices: list[str]) -> bool:
    return bool(devices) and all(d.startswith("cuda") for d in devices)


@dataclass(frozen=True)
class BuiltinBackend:
    devices: list[str] = field(default_factory=list)  # the granted devices, e.g. ["cpu:0"] or ["cuda:1"]
    python: str = sys.executable
    name: str = "builtin"
    # On CPU slots: the threads torch computes with (the grant's share of the node's cores,
    # `Node.cpu_threads`); None: torch's default, every core of the machine.
    cpu_threads: int | None = None

    def command(self, spec, *, port, spec_path, host="127.0.0.1", endpoint_id=None, api_key=None):
        argv = [self.python, "-m", "shared.serving.server", "--host", host, "--port", str(port),
                "--load-spec", str(spec_path)]
        if endpoint_id:
            argv += ["--endpoint-id", endpoint_id]
        env: dict[str, str] = {"TRAINING_SERVING_API_KEY": api_key} if api_key else {}
        if _is_cuda(self.devices):
            env["CUDA_VISIBLE_DEVICES"] = _cuda_visible(self.devices)
            if spec.batch_invariant:  # deterministic cuBLAS (torch.use_deterministic_algorithms needs it)
                env["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
        else:
            env["CUDA_VISIBLE_DEVICES"] = ""  # a CPU grant never touches a GPU another claim holds
            # Between requests torch's OpenMP threads sleep instead of spinning: a spinning pool
            # holds the cores the API, the manager and other serving processes need (measured:
            # direct p90 18.4 -> 7.7 ms, proxied added p90 13.3 -> 3.6 ms; docs/endpoints-benchmark.md).
            # An operator's own OMP_WAIT_POLICY (in the manager's environment) is kept.
            if "OMP_WAIT_POLICY" not in os.environ:
                env["OMP_WAIT_POLICY"] = "PASSIVE"
            # Only the grant's share of the cores. More threads than that take cores from the work
            # beside it, and with the passive pool above they are slower even alone: a small
            # model's many short parallel regions each wake sleeping threads (measured on 2 cores,
            # 8 rollouts of a 19M model: 1.15-1.30 s on 2 threads, 0.57-0.75 s on 1; docs/performance.md).
            if self.cpu_threads is not None:
                env["OMP_NUM_THREADS"] = str(self.cpu_threads)
        return argv, env


def _adapter_rank(directory: str) -> int:
    try:
        return int(json.loads((Path(directory) / "adapter_config.json").read_text()).get("r") or 0)
    except (OSError, ValueError, TypeError):
        return 0


def vllm_max_lora_rank(adapters: dict[str, str]) -> int:
    wanted = max([VLLM_MIN_LORA_RANK, *(_adapter_rank(d) for d in adapters.values())])
    return next((r for r in VLLM_LORA_RANKS if r >= wanted), VLLM_LORA_RANKS[-1])


def vllm_generation_overrides(spec: LoadSpec) -> dict[str, float | int]:
    """The spec's generation defaults in vLLM's terms. vLLM reads the model's generation_config.json
    (`--generation-config auto`) but ignores `do_sample`: a greedy model must say temperature 0.
    `max_new_tokens` is always given (the model's, else the deployment's DEFAULT_MAX_TOKENS): vLLM
    answers a request without max_tokens with the smaller of it and the rest of the context
    (vllm/entrypoints/utils.py `get_max_tokens`), which is what the built-in server does too
    (`Generator.fit_to_context`)."""
    defaults = sampling_defaults(spec.generation_config)
    overrides: dict[str, float | int] = {"temperature": defaults["temperature"],
                                         "max_new_tokens": defaults["max_tokens"]}
    if defaults["temperature"] > 0:
        overrides.update(top_p=defaults["top_p"], top_k=defaults["top_k"] or -1)
    if defaults["repetition_penalty"] != 1.0:
        overrides["repetition_penalty"] = defaults["repetition_penalty"]
    return overrides


@dataclass(frozen=True)
class VllmBackend:
    devices: list[str] = field(default_factory=list)  # CUDA devices granted, e.g. ["cuda:0", "cuda:1"]
    executable: str = "vllm"
    name: str = "vllm"
    # CUDA compute capability of the devices (None: unknown); batch-invariant mode needs 9.0+ (gpu_share)
    compute_capability: tuple[int, int] | None = None
    # A rollout server beside a trainer: the share of the GPU it may take and the longest sequence
    # it serves (gpu_share.gpu_memory_utilization, max_model_len); None: vLLM's defaults (an endpoint
    # alone on its GPUs)
    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None

    def command(self, spec, *, port, spec_path, host="127.0.0.1", endpoint_id=None, api_key=None):
        argv = [
            self.executable, "serve", spec.model_dir,
            "--host", host,
            "--port", str(port),
            "--served-model-name", spec.served_model_name,
            "--dtype", PRECISION_DTYPES[spec.dtype],
            "--tensor-parallel-size", str(max(1, len(self.devices))),
            "--generation-config", "auto",
            "--override-generation-config", json.dumps(vllm_generation_overrides(spec), sort_keys=True),
            "--seed", "0",
            "--enable-lora",
            "--max-lora-rank", str(vllm_max_lora_rank(spec.adapters)),
        ]
        if self.gpu_memory_utilization is not None:
            argv += ["--gpu-memory-utilization", f"{self.gpu_memory_utilization:.2f}"]
        if self.max_model_len is not None:
            argv += ["--max-model-len", str(self.max_model_len)]
        if spec.adapters:
            argv += ["--lora-modules", *(f"{name}={path}" for name, path in spec.adapters.items())]
        env = {
            "CUDA_VISIBLE_DEVICES": _cuda_visible(self.devices),
            "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True",  # enables /v1/load_lora_adapter and unload
        }
        if spec.batch_invariant and batch_invariant_supported(self.compute_capability):
            env["VLLM_BATCH_INVARIANT"] = "1"
        if api_key:  # vLLM checks it on /v1/*; /health stays open for the probe
            env["VLLM_API_KEY"] = api_key
        return argv, env


def vllm_installed() -> bool:
    return importlib.util.find_spec("vllm") is not None


def cuda_capability(devices: list[str]) -> tuple[int, int] | None:
    """The compute capability of the first granted CUDA device, as torch reports it (None if unknown).
    Read in the process that starts the server, where CUDA_VISIBLE_DEVICES is not yet narrowed."""
    try:
        import torch

        index = int(devices[0].split(":", 1)[1]) if ":" in devices[0] else 0
        return tuple(torch.cuda.get_device_capability(index)) if torch.cuda.is_available() else None
    except (ImportError, RuntimeError, ValueError, AssertionError):
        return None


def choose_backend(devices: list[str], *, gpu_memory_utilization: float | None = None,
                   max_model_len: int | None = None, cpu_threads: int | None = None) -> Backend:
    """vLLM where it can run (installed, and the grant is CUDA GPUs); the built-in server otherwise.
    `cpu_threads`: on CPU slots, the share of the node's cores the built-in server computes with."""
    if _is_cuda(devices) and vllm_installed():
        return VllmBackend(devices=list(devices), compute_capability=cuda_capability(devices),
                           gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len)
    return BuiltinBackend(devices=list(devices), cpu_threads=None if _is_cuda(devices) else cpu_threads)
