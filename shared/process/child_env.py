"""The environment a process of the trainer gives the processes it starts: an allow-list.

A child (a serving process, a rollout server, a training rank, the process that runs a
deployment's reward functions) gets only what it needs to run Python on its devices: the variables
named in `PASSED` and those that begin with one of `PASSED_PREFIXES`, plus what its caller adds for
it (its own secret, its rank, its threads). Everything else of the parent's environment stays with
the parent; above all the trainer's own secrets (TRAINING_ADMIN_TOKEN, TRAINING_REDIS_URL with
its password, TRAINING_TOKEN) and the credentials of other tools (MLflow, W&B, cloud keys), which a
child's code (a model's, a reward function's) could otherwise read, and which anyone allowed to read
`/proc/PID/environ` of the child would see.

Kept on purpose, since a child needs them:
- HF_* / HUGGINGFACE_*: where the hub cache is, and HF_TOKEN for a gated model a serving process
  loads (the hub's credential, not the trainer's).
- CUDA_*, NVIDIA_*, NCCL_*, TORCH_*, ...: which devices and how the libraries use them.
- OMP_*, MKL_*, ...: thread counts (the caller overrides them with the grant's share).

`die_with_parent` is the preexec_fn that makes the kernel kill such a child when its parent dies.
"""

from __future__ import annotations

import ctypes
import os
import signal
from collections.abc import Mapping

PASSED = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM",
    "TMPDIR", "TEMP", "TMP", "XDG_CACHE_HOME",
    "VIRTUAL_ENV", "PYTHONPATH", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED",
    "LD_LIBRARY_PATH", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
    "TRAINING_LOG_LEVEL",
})
PASSED_PREFIXES = (
    "LC_",  # locale
    "OMP_", "MKL_", "OPENBLAS_", "KMP_", "NUMEXPR_",  # the math libraries' threads
    "CUDA_", "NVIDIA_", "NCCL_", "CUBLAS_", "CUDNN_", "PYTORCH_", "TORCH_", "TORCHINDUCTOR_", "TRITON_",  # devices
    "HF_", "HUGGINGFACE_", "TRANSFORMERS_", "TOKENIZERS_", "SAFETENSORS_",  # model files and caches
    "VLLM_",  # vLLM's own settings (its API key is the caller's to add)
)


def passed(name: str) -> bool:
    """True when a child may inherit the variable `name`."""
    return name in PASSED or name.startswith(PASSED_PREFIXES)


def child_env(extra: Mapping[str, str] | None = None, *, parent: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a child: the allowed part of `parent` (this process's environment by
    default), then `extra` (which may set anything, and wins)."""
    parent = os.environ if parent is None else parent
    env = {name: value for name, value in parent.items() if passed(name)}
    env.update(extra or {})
    return env


def with_python_path(env: dict[str, str], *paths: str) -> dict[str, str]:
    """`env` with `paths` put first on its PYTHONPATH (where the child imports the trainer's code)."""
    env["PYTHONPATH"] = os.pathsep.join(p for p in (*paths, env.get("PYTHONPATH")) if p)
    return env


def die_with_parent() -> None:
    """In the child before exec: the kernel kills this child if the process that started it dies."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:  # not Linux: the parent's own clean-up still covers every ending that runs Python
        pass
