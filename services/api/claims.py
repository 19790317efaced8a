"""Queueing a run, evaluation or endpoint for devices, the one way every resource does it."""

from __future__ import annotations

from typing import Any

from services.api.context import Context


def reserve_places(context: Context, *, workload: str, count: int = 1) -> list[str]:
    """`count` places in the workload's queue, taken before anything is stored: the claim ids to
    submit under; 429 (TooManyQueued, with its sentence) when the workload's queued runs,
    evaluations and endpoints would pass the deployment's cap (shared/claims/queued.py). A place
    whose claim is never submitted (the request fails after this) is given back by
    `queue_for_devices`, or else expires within a minute."""
    return context.claims(checked=True).reserve(workload=workload, count=count)


def give_back_places(context: Context, *, workload: str, claim_ids: list[str]) -> None:
    context.claims().give_back(workload=workload, claim_ids=claim_ids)


def queue_for_devices(context: Context, doc: dict[str, Any], *, kind: str, event: str, claim_id: str,
                      claims: Any = None, model: str | None = None) -> dict[str, Any]:
    """Log `event`, submit the claim of `doc` (its pool, gpus, workload) under `claim_id`, the place
    `reserve_places` gave before `doc` was stored, and name the claim on its `scheduling`; returns
    the document as stored. The event comes first: once the claim is submitted, the scheduler may
    grant it (and log that) at once."""
    context.store.add_event(doc["id"], event)
    claim = (claims or context.claims()).submit(kind=kind, resource_id=doc["id"], pool=doc["pool"],
                                                gpus=doc["gpus"], workload=doc["workload"], model=model,
                                                claim_id=claim_id)

    def attach(current: dict[str, Any]) -> dict[str, Any]:
        current["scheduling"] = {**(current.get("scheduling") or {}), "claim": claim["id"]}
        return current

    return context.store.update(doc["id"], attach)
