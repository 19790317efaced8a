"""How much memory a run really took, per rank: measured in each training process and shown beside
the run's estimate (`memory` of the run document; shared/resolver.py `training_memory_gib`).

- On a CPU slot: the process's peak resident set (`resource.getrusage` ru_maxrss, the kernel's
  high-water mark, which sees torch's allocator and the loaded libraries alike); each rank of a
  multi-slot run is a process of its own and measures its own.
- On CUDA: `torch.cuda.max_memory_allocated` of the process's device, what the estimate's trainer
  part stands for (the CUDA context and the allocator's reserve are its runtime term).
- A grpo run's rollout server (the built-in server on a CPU slot) is a process of its own: its peak
  resident set (VmHWM of /proc/PID/status) is read before it is stopped and added to its rank's. On
  CUDA the server is vLLM, whose GPU memory torch in the trainer does not see: not measured (null).

Importing this loads no torch.
"""

from __future__ import annotations

import resource
from pathlib import Path
from typing import Any

GIB = 1024**3
RSS = "peak resident set"  # how a CPU slot's peak is measured
CUDA_ALLOCATED = "torch.cuda.max_memory_allocated"  # how a GPU's is


def measured_as(on_cpu: bool) -> str:
    return RSS if on_cpu else CUDA_ALLOCATED


def own_peak_bytes(on_cpu: bool) -> int:
    """This process's peak: resident set on CPU, allocated on its CUDA device."""
    if on_cpu:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    import torch

    return int(torch.cuda.max_memory_allocated())


def process_peak_bytes(pid: int) -> int | None:
    """The peak resident set of another live process (VmHWM), or None when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def rank_peak(rank: int, *, trainer_bytes: int, server_bytes: int | None = None) -> dict[str, Any]:
    """One rank's entry of the run's `memory.ranks`: its trainer, its rollout server, their sum."""
    total = trainer_bytes + (server_bytes or 0)
    return {"rank": rank, "peakGiB": round(total / GIB, 3), "trainerGiB": round(trainer_bytes / GIB, 3),
            "rolloutServerGiB": None if server_bytes is None else round(server_bytes / GIB, 3)}


def gathered(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """Every rank's entry, in rank order, on every rank (a collective: all ranks call it together);
    on one device, this one's."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
        return [entry]
    entries: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(entries, entry)
    return sorted(entries, key=lambda e: e["rank"])
