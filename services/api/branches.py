"""Snapshots as sources (SPEC 2.4, 3.3): the one a request names, which of its parts this
deployment reads, and whether its files are intact before work is queued on it. A plan's restore
rules are judged in shared/plans/check.py, with these as its facts (plan_facts.py).
"""

from __future__ import annotations

from typing import Any

from services.api.auth import Principal
from services.api.context import Context
from shared import reasons
from shared.errors import NotFound
from shared.plans.check import refuse_damaged
from shared.snapshots.files import damage_of


def snapshot_for(context: Context, snapshot_id: str, who: Principal, *, field: str = "restore.snapshot") -> dict[str, Any]:
    """The snapshot a request names in `field` (a plan's restore.snapshot, an endpoint's snapshot)."""
    doc = context.store.get(snapshot_id)
    if doc is None or doc.get("kind") != "snapshot" or not who.may_use(doc.get("workload", "")):
        raise NotFound(reasons.snapshot_unknown(snapshot_id), details={"field": field})
    return doc


def readable_of(snapshot: dict[str, Any]) -> dict[str, bool]:
    """Which parts of a snapshot this deployment reads, derived from its layout and formats (so a
    deployment that learns a format reads its old snapshots too)."""
    from shared.snapshots.manifest import readable_parts

    contents = snapshot.get("contents") or {}
    return readable_parts({"layout": snapshot.get("layout"), "weights": contents.get("weights"),
                           "trainingState": contents.get("trainingState")})


def with_readable(context: Context, snapshot: dict[str, Any]) -> dict[str, Any]:
    """The snapshot as shown: which parts this deployment reads, each false when a quick look
    (sizes, shared/snapshots/files.py) finds one of its files damaged, and what was found."""
    readable = readable_of(snapshot)
    damaged = {part: damage_of(context.artifacts, snapshot, part) if readable[part] else None
               for part in ("weights", "trainingState")}
    readable = {part: readable[part] and damaged[part] is None for part in readable}
    readable["trainingState"] = readable["trainingState"] and readable["weights"]
    return {**snapshot, "readable": readable, "damaged": {part: d and d._asdict() for part, d in damaged.items()}}


def require_intact(context: Context, snapshot: dict[str, Any], part: str, *, field: str) -> None:
    """Before work is queued on a snapshot (or its adapter downloaded): its `part` ("weights" or
    "trainingState") checked file by file, sha256 included; a 422 naming the snapshot and the file."""
    refuse_damaged(snapshot, damage_of(context.artifacts, snapshot, part, deep=True), field=field)
