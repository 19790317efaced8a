"""Branch comparisons (SPEC 2.5, 3.3): several snapshots (a parent and its branches) scored on the
same data, side by side.

A comparison stores only what it was asked (snapshots, dataset) and the evaluations it created,
one per snapshot. Its status and its table are derived at read time from those evaluations by
`comparison_view`, never written, so they can not disagree with the evaluations themselves.
"""

from __future__ import annotations

from typing import Any

from services.api.auth import Principal, require_workload, visible
from services.api.branches import readable_of, require_intact
from services.api.claims import give_back_places, reserve_places
from services.api.context import Context
from services.api.evaluations import (
    cancel_evaluation,
    check_evaluation,
    store_evaluation,
    visible_snapshot,
    withdraw_evaluation,
)
from shared import reasons
from shared.claims.fits import pool_named
from shared.config.deployment import DEFAULT_WORKLOADS
from shared.errors import Conflict, Unprocessable
from shared.lifecycle.states import EvaluationStatus
from shared.schemas.evaluations import parse_comparison
from shared.store.ids import Kind, new_id

# metric -> True when lower is better. Reward means (`reward:NAME`) and the judge score are higher-better.
LOWER_IS_BETTER = {"loss": True, "perplexity": True, "exactMatch": False, "judge": False}
# How `best` names the base model's row (`base: true`): it has no snapshot id.
BASE_ROW = "base"


def row_key(row: dict[str, Any]) -> str:
    """What `best` names a row by: its snapshot's id, or BASE_ROW for the base model's row."""
    return row["snapshot"] or BASE_ROW


def _restore_kind(context: Context, snapshot: dict[str, Any]) -> str:
    """How the run that wrote the snapshot started: none (fresh), weights or trainingState."""
    run = context.store.get(snapshot["run"]) if snapshot.get("run") else None
    return ((run or {}).get("parent") or {}).get("restore") or "none"


def create_comparison(context: Context, *, body: Any, who: Principal) -> dict[str, Any]:
    """Check every snapshot (404 unknown, 422 unreadable weights or mixed models) and every
    evaluation it would queue (dataset, pool, claim) before anything is written; then queue one
    evaluation per snapshot and store the comparison naming them. A refused comparison stores
    nothing, and one whose queueing fails part-way withdraws the evaluations it had queued."""
    spec = parse_comparison(body)
    workload = require_workload(spec["workload"] or who.default_workload(DEFAULT_WORKLOADS["evaluation"]))
    snapshots = [visible_snapshot(context, snapshot_id, who, "snapshots") for snapshot_id in spec["snapshots"]]
    for snap in snapshots:
        if not readable_of(snap)["weights"]:
            raise Unprocessable(reasons.comparison_weights_unreadable(snap["id"]),
                                details={"field": "snapshots", "snapshot": snap["id"]})
        require_intact(context, snap, "weights", field="snapshots")
    models = {snap["id"]: snap.get("model") or "?" for snap in snapshots}
    if len(set(models.values())) > 1:
        raise Unprocessable(reasons.comparison_other_models(models), details={"field": "snapshots", "models": models})
    model = next(iter(models.values()))
    pool_name = spec["pool"] or context.config.default_pool
    pool_named(context.config, pool_name, field="pool")  # 404; each evaluation's GPUs are checked below
    asked = {"model": model, "dataset": spec["dataset"], "pool": pool_name, "workload": workload,
             "maxTokens": spec["maxTokens"]}
    checked = [check_evaluation(context, who=who, checked_snapshot=snap, body={**asked, "snapshot": snap["id"]})
               for snap in snapshots]
    if spec["base"]:  # the base model without an adapter, a row of its own (issue 30)
        checked.append(check_evaluation(context, who=who, body={**asked, "snapshot": None}))
    places = reserve_places(context, workload=workload, count=len(checked))  # all or none: 429 past the cap
    comparison_id = new_id(Kind.COMPARISON)
    evaluations: list[str] = []
    try:
        for one, claim_id in zip(checked, places):
            evaluations.append(store_evaluation(context, one, claim_id=claim_id, comparison=comparison_id)["id"])
    except Exception:
        for evaluation_id in evaluations:
            withdraw_evaluation(context, evaluation_id, detail=reasons.comparison_not_queued(comparison_id))
        give_back_places(context, workload=workload, claim_ids=places)
        raise
    rows = [{"snapshot": snap["id"], "run": snap.get("run"), "step": snap.get("step"),
             "restore": _restore_kind(context, snap), "base": False} for snap in snapshots]
    if spec["base"]:
        rows.append({"snapshot": None, "run": None, "step": None, "restore": None, "base": True})
    doc = context.store.create({
        "id": comparison_id, "kind": "comparison", "workload": workload, "model": model,
        "dataset": checked[0]["doc"]["dataset"], "pool": pool_name, "snapshots": rows, "evaluations": evaluations, "detail": None,
    })
    context.store.add_event(comparison_id, reasons.comparison_queued(len(evaluations), pool_name))
    return comparison_view(context, doc)


def get_comparison(context: Context, comparison_id: str) -> dict[str, Any]:
    doc = context.store.get(comparison_id)
    doc = visible(doc if doc and doc.get("kind") == "comparison" else None, "comparison", comparison_id)
    return comparison_view(context, doc)


def cancel_comparison(context: Context, comparison_id: str) -> dict[str, Any]:
    """Cancel every evaluation of the comparison that has not ended (409 when all have)."""
    view = get_comparison(context, comparison_id)
    if EvaluationStatus(view["status"]).is_terminal:
        raise Conflict(reasons.comparison_ended(comparison_id, view["status"]), details={"status": view["status"]})
    for row in view["rows"]:
        if row["evaluation"] and row["status"] and not EvaluationStatus(row["status"]).is_terminal:
            try:
                cancel_evaluation(context, row["evaluation"])
            except Conflict:
                pass  # it ended between the read and the cancel
    context.store.add_event(comparison_id, reasons.CANCELLED_BY_USER)
    return get_comparison(context, comparison_id)


def comparison_status(statuses: list[str]) -> str:
    """QUEUED while none has started; RUNNING while any is under way; then SUCCEEDED when all did,
    FAILED when any failed, else CANCELLED."""
    if not statuses or all(s == EvaluationStatus.QUEUED for s in statuses):
        return EvaluationStatus.QUEUED.value
    if any(not EvaluationStatus(s).is_terminal for s in statuses):
        return EvaluationStatus.RUNNING.value
    if all(s == EvaluationStatus.SUCCEEDED for s in statuses):
        return EvaluationStatus.SUCCEEDED.value
    if any(s == EvaluationStatus.FAILED for s in statuses):
        return EvaluationStatus.FAILED.value
    return EvaluationStatus.CANCELLED.value


def metric_columns(metrics: dict[str, Any] | None) -> dict[str, float | None]:
    """An evaluation's metrics as flat comparable columns: loss, perplexity, exactMatch,
    reward:NAME, judge."""
    metrics = metrics or {}
    columns = {name: metrics.get(name) for name in ("loss", "perplexity", "exactMatch")}
    for name, value in sorted((metrics.get("rewards") or {}).items()):
        columns[f"reward:{name}"] = value
    columns["judge"] = metrics.get("judge")
    return columns


def mark_best(rows: list[dict[str, Any]]) -> dict[str, list[str]]:
    """metric -> the rows (row_key: snapshot ids, BASE_ROW) with the best value (ties share it);
    only metrics some row has, and none where every scored row has the same value (then no row is
    better at it). Nothing while a row has not ended: a best over part of the table is no best."""
    if any(not row["status"] or not EvaluationStatus(row["status"]).is_terminal for row in rows):
        return {}
    best: dict[str, list[str]] = {}
    names = {name for row in rows for name, value in row["metrics"].items() if value is not None}
    for name in sorted(names):
        scored = [(row["metrics"][name], row_key(row)) for row in rows if row["metrics"].get(name) is not None]
        pick = min if LOWER_IS_BETTER.get(name, False) else max
        top = pick(value for value, _ in scored)
        winners = [snapshot for value, snapshot in scored if value == top]
        if len(winners) < len(scored) or len(scored) == 1:
            best[name] = winners
    return best


def comparison_view(context: Context, doc: dict[str, Any]) -> dict[str, Any]:
    """The comparison with its derived status, one row per snapshot, and the best marked."""
    evaluations = {e["snapshot"] or BASE_ROW: e for e in context.store.get_many(doc.get("evaluations") or [])}
    rows = []
    for row in doc["snapshots"]:
        row = {"base": False, **row}  # a comparison stored before the base row existed
        evaluation = evaluations.get(row_key(row)) or {}
        finished = evaluation.get("status") == EvaluationStatus.SUCCEEDED
        rows.append({**row, "evaluation": evaluation.get("id"), "status": evaluation.get("status"),  # read-time view
                     "metrics": metric_columns(evaluation.get("metrics") if finished else None)})
    best = mark_best(rows)
    for row in rows:
        row["best"] = [name for name, winners in best.items() if row_key(row) in winners]
    status = comparison_status([r["status"] for r in rows if r["status"]])
    failed = [r for r in rows if r["status"] in (EvaluationStatus.FAILED, EvaluationStatus.CANCELLED)]
    detail = doc.get("detail")
    if failed and EvaluationStatus(status).is_terminal and status != EvaluationStatus.SUCCEEDED:
        detail = "; ".join(reasons.comparison_row_ended(r["evaluation"], r["snapshot"], r["status"],
                                                         evaluations[row_key(r)].get("detail"))
                           for r in failed)
    return {**doc, "status": status, "detail": detail, "rows": rows, "best": best}  # read-time view
