"""The one rule of a claim that could never be granted (SPEC 5), the same for runs, evaluations and
endpoints: its pool must be one of the deployment's, it may not ask for more GPUs than the largest
node of that pool has, nor for more than its workload's quota there. Such a claim is refused at
submission, so it never blocks a pool forever; the API checks it before anything is stored, and
`ClaimQueue.check` checks it again as the claim is queued.

A pool that does not exist is a 404, as it is for GET /v1/pools/NAME: a well-formed name of
something the deployment does not hold, as an unknown model, dataset or snapshot named in a body is
(docs/api.md); `details.field` says which field of the request named it.
"""

from __future__ import annotations

from shared import reasons
from shared.config.deployment import DeploymentConfig, Pool
from shared.errors import NotFound, Unprocessable


def pool_named(config: DeploymentConfig, name: str, *, field: str | None = None) -> Pool:
    """The deployment's pool `name`, or a 404 naming it (and the request's `field`, when a body named it)."""
    pool = config.pool(name)
    if pool is None:
        details = {"pool": name, "pools": list(config.pools)}
        raise NotFound(reasons.pool_unknown(name), details={"field": field, **details} if field else details)
    return pool


def refuse_never_granted(pool: Pool, *, kind: str, gpus: int, workload: str, field: str = "gpus") -> None:
    """422 for a claim of `gpus` that no node of `pool` could hold, or that `workload`'s quota in it
    never allows (`field`: the request's field of the GPU count)."""
    largest = pool.largest_node_gpus
    if gpus > largest:
        raise Unprocessable(reasons.gpus_exceed_every_node(gpus=gpus, pool=pool.name, largest_node_gpus=largest,
                                                           kind=kind), details={"field": field})
    quota = pool.quotas.get(workload)
    if quota is not None and gpus > quota:
        raise Unprocessable(reasons.gpus_exceed_quota(gpus=gpus, workload=workload, pool=pool.name, quota_gpus=quota,
                                                      kind=kind), details={"field": field, "quota": quota})


def check_claim(config: DeploymentConfig, *, kind: str, pool: str, gpus: int, workload: str,
                pool_field: str | None = "pool", gpus_field: str = "gpus") -> Pool:
    """Both rules: the pool the claim names, or the refusal of a claim that could never be granted."""
    found = pool_named(config, pool, field=pool_field)
    refuse_never_granted(found, kind=kind, gpus=gpus, workload=workload, field=gpus_field)
    return found
