"""What every request handler needs, built once per app: config, Redis, store, artifacts, catalog."""

from __future__ import annotations

from dataclasses import dataclass

import redis
from flask import current_app

from shared.config.deployment import DeploymentConfig
from shared.models.catalog import Catalog
from shared.store.artifacts import ArtifactRoot
from shared.store.documents import Store, connect
from shared.store.keys import Keys


@dataclass
class Context:
    config: DeploymentConfig
    redis: redis.Redis
    keys: Keys
    store: Store
    artifacts: ArtifactRoot
    catalog: Catalog

    @classmethod
    def build(cls, config: DeploymentConfig) -> "Context":
        client = connect(config.redis_url)
        keys = Keys(config.key_prefix)
        artifacts = ArtifactRoot(config.artifact_root)
        store = Store(client, keys)
        return cls(config, client, keys, store, artifacts, Catalog(config, artifacts, store))

    def claims(self, *, checked: bool = False):
        """The claim queues; `checked` ones refuse claims that could never be granted."""
        from shared.claims.queue import ClaimQueue

        return ClaimQueue(self.redis, self.keys, config=self.config if checked else None)


def ctx() -> Context:
    return current_app.extensions["trainer"]
