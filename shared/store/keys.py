"""Every Redis key of the trainer, built here and nowhere else.

All keys start with the deployment's prefix, so one Redis can hold several deployments (and the
tests run under a prefix of their own).
"""

from __future__ import annotations


class Keys:
    def __init__(self, prefix: str):
        self.prefix = prefix

    # --- resources: one JSON document per resource, one sorted index (by creation time) per kind
    def resource(self, resource_id: str) -> str:
        return f"{self.prefix}res:{resource_id}"

    def index(self, kind: str) -> str:
        return f"{self.prefix}index:{kind}"

    def events(self, resource_id: str) -> str:
        return f"{self.prefix}events:{resource_id}"

    def metrics(self, run_id: str) -> str:
        return f"{self.prefix}metrics:{run_id}"

    def samples(self, run_id: str) -> str:
        """List: a GRPO run's rollout samples, one JSON entry per step, the last few kept
        (shared/store/rollout_samples.py)."""
        return f"{self.prefix}samples:{run_id}"

    def snapshots_of(self, run_id: str) -> str:
        return f"{self.prefix}snapshots-of:{run_id}"

    def dataset_by_digest(self, digest: str) -> str:
        return f"{self.prefix}dataset-digest:{digest}"

    def imported_models(self) -> str:
        """Hash: base-model id -> the catalog entry of a model `training base-models import` added."""
        return f"{self.prefix}imported-models"

    # --- scheduling (owned by services/scheduler)
    def pool_queue(self, pool: str) -> str:
        """Sorted set of waiting claim ids, scored by queue sequence number."""
        return f"{self.prefix}pool:{pool}:queue"

    def pool_held(self, pool: str) -> str:
        """Set of granted claim ids holding devices of this pool."""
        return f"{self.prefix}pool:{pool}:held"

    def claim(self, claim_id: str) -> str:
        return f"{self.prefix}claim:{claim_id}"

    def claim_of(self, resource_id: str) -> str:
        """String: id of the resource's live (WAITING or GRANTED) claim; absent when none."""
        return f"{self.prefix}claim-of:{resource_id}"

    def workload_queued(self, workload: str) -> str:
        """Sorted set: ids of the workload's WAITING claims, and of places reserved for claims about
        to be submitted, scored by when each was added (epoch seconds): what the cap on queued
        claims counts (shared/claims/queue.py)."""
        return f"{self.prefix}workload:{workload}:queued"

    def claim_seq(self) -> str:
        return f"{self.prefix}claim-seq"

    def scheduler_wakeup(self) -> str:
        return f"{self.prefix}scheduler:wakeup"

    def dispatching(self, claim_id: str) -> str:
        """String with a TTL: one scheduler is dispatching this granted claim."""
        return f"{self.prefix}dispatching:{claim_id}"

    # --- workers
    def node_alive(self, node: str) -> str:
        """Set (with a short TTL) by the node's worker while it runs: the scheduler grants only
        devices of nodes whose worker is alive."""
        return f"{self.prefix}node:{node}:alive"

    def node_ready(self, node: str) -> str:
        """Set (with the heartbeat's TTL) by the node's worker once it takes tasks (its training
        stack imported, Celery consuming): among nodes that fit, the scheduler prefers these."""
        return f"{self.prefix}node:{node}:ready"

    def node_stopping(self, node: str) -> str:
        """Set (with a TTL of the worker's stop grace and a margin) by a worker that was asked to
        stop, as it drops its heartbeat: it is giving its runs back itself, so the scheduler's
        dead-node pass leaves them to it until the key expires (services/scheduler/lost.py)."""
        return f"{self.prefix}node:{node}:stopping"

    def workers_missing(self) -> str:
        """Hash node -> epoch seconds: since when the scheduler has seen no worker heartbeat for a
        node that holds dispatched runs or evaluations (services/scheduler/dead_nodes.py)."""
        return f"{self.prefix}workers:missing-since"

    def lease(self, resource_id: str) -> str:
        return f"{self.prefix}lease:{resource_id}"

    def fence(self, resource_id: str) -> str:
        return f"{self.prefix}fence:{resource_id}"

    # --- endpoint managers (owned by services/endpoint_manager)
    def endpoint_manager(self, node: str) -> str:
        """String with a TTL: the token of the one endpoint manager acting for this node."""
        return f"{self.prefix}node:{node}:endpoint-manager"

    def endpoint_name_index(self, workload: str) -> str:
        """Hash name -> id of the endpoint of this workload last created with that name (live or
        not: a lookup checks the document), written in the transaction that creates the endpoint
        (shared/store/endpoint_names.py)."""
        return f"{self.prefix}endpoint-name-index:{workload}"

    def endpoint_name_workloads(self) -> str:
        """Set: the workloads that have an endpoint name index (an admin's lookups read them all)."""
        return f"{self.prefix}endpoint-name-workloads"

    def endpoint_name_index_version(self) -> str:
        """String: the version of the name index this store holds (rebuilt from the documents when
        it is older or missing: shared/endpoint_names.ensure_name_index)."""
        return f"{self.prefix}endpoint-name-index-version"

    def legacy_endpoint_names(self, name: str) -> str:
        """Set of ids under a name in any workload, as releases before the per-workload index kept
        them; dropped by the index's rebuild."""
        return f"{self.prefix}endpoint-names:{name}"

    def endpoint_managers_missing(self) -> str:
        """Hash node -> epoch seconds: since when the scheduler has seen no endpoint manager for a
        node that holds endpoint claims (services/scheduler/lost_endpoints.py)."""
        return f"{self.prefix}endpoint-managers:missing-since"

    def celery_prefix(self) -> str:
        return f"{self.prefix}celery:"
