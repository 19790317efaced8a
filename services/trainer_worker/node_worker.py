"""What a node's worker needs to carry out its work: the deployment's config, Redis (the retrying
client: shared/store/redis_retry.py), the store, the artifact root, the catalog and who it is; and the two
things every task does first with its grant, whatever it runs: use only its devices, and stamp them
with its fence on the work's document."""

from __future__ import annotations

import os
import socket
from typing import Any

from services.trainer_worker.lease import Lease
from shared.config.deployment import DeploymentConfig
from shared.models.catalog import Catalog
from shared.store.artifacts import ArtifactRoot
from shared.store.documents import Store
from shared.store.keys import Keys
from shared.store.redis_retry import connect_retrying


class Worker:
    """What a node's worker needs to run work: config, Redis, store, artifacts."""

    def __init__(self, config: DeploymentConfig, node: str):
        self.config = config
        self.node = node
        self.redis = connect_retrying(config.redis_url, config.redis_retry_s)
        self.keys = Keys(config.key_prefix)
        self.store = Store(self.redis, self.keys)
        self.artifacts = ArtifactRoot(config.artifact_root)
        self.catalog = Catalog(config, self.artifacts, self.store)
        self.holder = f"{node}/{socket.gethostname()}/{os.getpid()}"

    def claims(self):
        from shared.claims.queue import ClaimQueue

        return ClaimQueue(self.redis, self.keys)


def use_granted_devices(worker: Worker, devices: list[str]) -> str:
    """Make this task's process use only its granted devices; returns "cuda" or "cpu".

    The child process is fresh per task (max-tasks-per-child 1) and has not touched CUDA yet: only
    the granted GPUs are exposed, which the work then sees as cuda:0..N-1. CPU slots share the
    node's cores evenly, so two tasks side by side don't fight.
    """
    cuda = [d.split(":", 1)[1] for d in devices if d.startswith("cuda:")]
    if cuda:
        os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(cuda)
        return "cuda"
    import torch

    node = worker.config.node(worker.node)
    if node is not None and node.device_kind == "cpu":
        torch.set_num_threads(node.cpu_threads())
    return "cpu"


def take_devices(lease: Lease, node: str, devices: list[str]):
    """The change that stamps a run's or evaluation's document with its fence and devices."""
    def take(doc: dict[str, Any]) -> dict[str, Any]:
        doc["fence"] = lease.fence
        doc["scheduling"] = {**(doc.get("scheduling") or {}), "node": node, "devices": devices}
        return doc

    return take
