"""Queueing a run, evaluation or endpoint for devices, the one way every resource does it."""

from __future__ import annotations

from typing import Any

from services.api.context import Context


def queue_for_devices(context: Context, doc: dict[str, Any], *, kind: str, event: str, claims: Any = None,
                      model: str | None = None) -> dict[str, Any]:
    """Log `event`, submit the claim of `doc` (its pool, gpus, workload) and name the claim on its
    `scheduling`; returns the document as stored. The event comes first: once the claim is
    submitted, the scheduler may grant it (and log that) at once."""
    context.store.add_event(doc["id"], event)
    claim = (claims or context.claims()).submit(kind=kind, resource_id=doc["id"], pool=doc["pool"],
                                                gpus=doc["gpus"], workload=doc["workload"], model=model)

    def attach(current: dict[str, Any]) -> dict[str, Any]:
        current["scheduling"] = {**(current.get("scheduling") or {}), "claim": claim["id"]}
        return current

    return context.store.update(doc["id"], attach)
