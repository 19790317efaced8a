"""Branch sources (SPEC 2.4, 3.3): which snapshot a plan restores, and whether it may.

Checked at submission, before anything is queued; each refusal is a 422 with its sentence.
"""

from __future__ import annotations

from typing import Any

from services.api.auth import Principal
from services.api.context import Context
from shared import reasons
from shared.errors import NotFound, Unprocessable
from shared.snapshot_files import damage_of


def snapshot_for(context: Context, snapshot_id: str, who: Principal, *, field: str = "restore.snapshot") -> dict[str, Any]:
    """The snapshot a request names in `field` (a plan's restore.snapshot, an endpoint's snapshot)."""
    doc = context.store.get(snapshot_id)
    if doc is None or doc.get("kind") != "snapshot" or not who.may_use(doc.get("workload", "")):
        raise NotFound(f"snapshot {snapshot_id} does not exist", details={"field": field})
    return doc


def readable_of(snapshot: dict[str, Any]) -> dict[str, bool]:
    """Which parts of a snapshot this deployment reads, derived from its layout and formats (so a
    deployment that learns a format reads its old snapshots too)."""
    from shared.snapshots import readable_parts

    contents = snapshot.get("contents") or {}
    return readable_parts({"layout": snapshot.get("layout"), "weights": contents.get("weights"),
                           "trainingState": contents.get("trainingState")})


def with_readable(context: Context, snapshot: dict[str, Any]) -> dict[str, Any]:
    """The snapshot as shown: which parts this deployment reads, each false when a quick look
    (sizes, shared/snapshot_files.py) finds one of its files damaged, and what was found."""
    readable = readable_of(snapshot)
    damaged = {part: damage_of(context.artifacts, snapshot, part) if readable[part] else None
               for part in ("weights", "trainingState")}
    readable = {part: readable[part] and damaged[part] is None for part in readable}
    readable["trainingState"] = readable["trainingState"] and readable["weights"]
    return {**snapshot, "readable": readable, "damaged": {part: d and d._asdict() for part, d in damaged.items()}}


def require_intact(context: Context, snapshot: dict[str, Any], part: str, *, field: str) -> None:
    """Before work is queued on a snapshot (or its adapter downloaded): its `part` ("weights" or
    "trainingState") checked file by file, sha256 included; a 422 naming the snapshot and the file."""
    found = damage_of(context.artifacts, snapshot, part, deep=True)
    if found is not None:
        raise Unprocessable(reasons.snapshot_damaged(snapshot["id"], found.file, found.problem),
                            details={"field": field, "snapshot": snapshot["id"], "file": found.file})


def check_restore(context: Context, plan: dict[str, Any], who: Principal) -> dict[str, Any] | None:
    """The snapshot `plan` restores, after every rule of SPEC 3.3 holds; None for a fresh run."""
    restore = plan.get("restore")
    if not restore:
        return None
    snap = snapshot_for(context, restore["snapshot"], who)
    readable = readable_of(snap)
    details = {"field": "restore", "snapshot": snap["id"]}
    if not readable.get("weights"):
        raise Unprocessable(reasons.WEIGHTS_UNREADABLE, details=details)
    if snap.get("model") and snap["model"] != plan["model"]:
        raise Unprocessable(reasons.branch_other_model(snapshot_id=snap["id"], snapshot_model=snap["model"],
                                                       plan_model=plan["model"]), details=details)
    if restore["what"] == "weights":
        require_intact(context, snap, "weights", field="restore")  # last: its files are read whole
        return snap
    if not (snap.get("contents") or {}).get("trainingState"):
        raise Unprocessable(reasons.snapshot_has_no_training_state(snap["id"]), details=details)
    if not readable.get("trainingState"):
        raise Unprocessable(reasons.TRAINING_STATE_UNREADABLE, details=details)
    gpus = plan["execution"]["gpus"]
    if snap["gpus"] != gpus:
        raise Unprocessable(reasons.training_state_gpu_mismatch(saved_gpus=snap["gpus"], run_gpus=gpus),
                            details={**details, "savedGpus": snap["gpus"], "gpus": gpus})
    for what in ("method", "precision"):
        if snap.get(what) and snap[what] != plan[what]:
            raise Unprocessable(reasons.branch_changes(what=what, parent=snap[what], plan=plan[what]), details=details)
    require_intact(context, snap, "weights", field="restore")  # last: its files are read whole
    require_intact(context, snap, "trainingState", field="restore")
    return snap


def check_engine(snapshot: dict[str, Any] | None, plan: dict[str, Any], engine: str) -> None:
    """After resolution: a trainingState branch trains with its parent's engine."""
    if snapshot is None or plan["restore"]["what"] != "trainingState":
        return
    parent = snapshot.get("engine")
    if parent and parent != engine:
        raise Unprocessable(reasons.branch_changes(what="engine", parent=parent, plan=engine),
                            details={"field": "restore", "snapshot": snapshot["id"]})
