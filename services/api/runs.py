"""Runs: judge the plan (shared/plans/check.py), store the run, queue its claim; cancel, pause and
resume it (SPEC 2.3, 3.1)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from services.api.auth import Principal, require_workload, visible
from services.api.claims import give_back_places, queue_for_devices, reserve_places
from services.api.context import Context
from services.api.plan_facts import RunPlanFacts
from shared import reasons
from shared.config import DEFAULT_WORKLOADS
from shared.errors import Conflict
from shared.ids import Kind, new_id
from shared.lifecycle.runs import RUNS
from shared.plans import read_plan
from shared.plans.check import check
from shared.states import RunStatus


def create_run(context: Context, *, body: Any, who: Principal) -> dict[str, Any]:
    """Parse the plan, fill in the caller's defaults (workload, pool), judge it (shared/plans/check.py,
    with what plan_facts.py looks up), then store the run and queue its claim."""
    plan, name, tags = read_plan(body)
    workload = require_workload(plan.workload or who.default_workload(DEFAULT_WORKLOADS["run"]))
    plan = replace(plan, workload=workload,
                   execution=replace(plan.execution, pool=plan.execution.pool or context.config.default_pool))
    facts = RunPlanFacts(context, plan, who)
    accepted = check(plan, facts)
    (claim_id,) = reserve_places(context, workload=workload)  # 429 past the workload's cap, nothing stored

    pool, gpus, engine = plan.execution.pool, plan.execution.gpus, accepted.engine.name
    dataset, validation, parent = facts.dataset(), facts.validation_dataset(), accepted.parent
    # a dataset named by its name (issue 30) is stored by its id, as every plan names it
    plan = replace(plan, dataset=dataset["id"], validation_dataset=validation["id"] if validation else None)
    run = context.store.create({
        "id": new_id(Kind.RUN),
        "kind": "run",
        "name": name,
        "tags": tags,
        "workload": workload,
        **RUNS.created(),
        "detail": None,
        "plan": plan.to_dict(),
        "engine": engine,
        "pool": pool,
        "gpus": gpus,
        "datasetDigest": dataset["digest"],
        "validationDatasetDigest": validation["digest"] if validation else None,
        # a trainingState branch starts at its snapshot's step (stepRange), not at 0
        "progress": {"step": accepted.step_range["startStep"], "totalSteps": None, "loss": None, "firstLoss": None,
                     "tokensPerSecond": None, "etaSeconds": None},
        "memory": {"estimateGiB": None, "peakGiB": None, "ranks": []},  # the worker's (reporter.py)
        "scheduling": {"claim": None, "pool": pool, "node": None, "devices": [], "position": None},
        "snapshots": [],
        "latestSnapshot": None,
        "cancelRequested": False,
        "pauseRequested": False,
        "attempts": 0,
        "judgeWorkloads": accepted.judge_workloads,
        "stepRange": accepted.step_range,
        "parent": ({"snapshot": parent["id"], "run": parent.get("run"), "restore": plan.restore_kind}
                   if parent else None),
        "startedAt": None,
        "finishedAt": None,
    })
    return queue_for_devices(context, run, kind="run", claim_id=claim_id,
                             event=reasons.run_queued(pool=pool, gpus=gpus, engine=engine,
                                                      device_kind=_device_kind(context, pool)))


def get_run(context: Context, run_id: str) -> dict[str, Any]:
    doc = context.store.get(run_id)
    return visible(doc if doc and doc.get("kind") == "run" else None, "run", run_id)


def cancel_run(context: Context, run_id: str) -> dict[str, Any]:
    get_run(context, run_id)
    released: list[str] = []

    def cancel(doc: dict[str, Any]) -> dict[str, Any]:
        status = RunStatus(doc["status"])
        if status.is_terminal:
            raise Conflict(reasons.run_already_ended(run_id, status), details={"status": status})
        if status in (RunStatus.QUEUED, RunStatus.PAUSED):
            RUNS.apply(doc, RunStatus.CANCELLED, detail=reasons.CANCELLED_WHILE_QUEUED
                       if status == RunStatus.QUEUED else reasons.CANCELLED_BY_USER)
            if doc.get("scheduling"):
                released.append(doc["scheduling"]["claim"])
        else:
            # STARTING or RUNNING: the worker stops at its next step boundary and ends the run.
            doc["cancelRequested"] = True
        return doc

    doc = context.store.update(run_id, cancel)
    for claim_id in released:
        context.claims().release(claim_id)
    context.store.add_event(run_id, reasons.RUN_CANCEL_REQUESTED if doc["status"] != "CANCELLED"
                            else reasons.RUN_CANCELLED)
    return doc


def pause_run(context: Context, run_id: str) -> dict[str, Any]:
    """Ask the worker to write a snapshot with training state and give the GPUs back (PAUSED)."""
    get_run(context, run_id)

    def pause(doc: dict[str, Any]) -> dict[str, Any]:
        if doc["status"] not in (RunStatus.STARTING, RunStatus.RUNNING):
            raise Conflict(reasons.cannot_pause(run_id, doc["status"]), details={"status": doc["status"]})
        doc["pauseRequested"] = True
        return doc

    doc = context.store.update(run_id, pause)
    context.store.add_event(run_id, reasons.RUN_PAUSE_REQUESTED)
    return doc


def resume_run(context: Context, run_id: str) -> dict[str, Any]:
    """Queue a PAUSED run again; its worker continues exactly from the pause snapshot."""
    run = get_run(context, run_id)

    def requeue(doc: dict[str, Any]) -> dict[str, Any]:
        if doc["status"] != RunStatus.PAUSED:
            raise Conflict(reasons.cannot_resume(run_id, doc["status"]), details={"status": doc["status"]})
        # the reason it paused (a full disk: shared/reasons.run_paused_disk_full) is over once resumed
        return RUNS.apply(doc, RunStatus.QUEUED, detail=None,
                          scheduling={**(doc.get("scheduling") or {}), "node": None, "devices": []})

    (claim_id,) = reserve_places(context, workload=run["workload"])  # 429 past the cap: it stays PAUSED
    try:
        run = context.store.update(run_id, requeue)
    except BaseException:
        give_back_places(context, workload=run["workload"], claim_ids=[claim_id])
        raise
    return queue_for_devices(context, run, kind="run", claim_id=claim_id,
                             event=reasons.run_resumed(pool=run["pool"], gpus=run["gpus"],
                                                       device_kind=_device_kind(context, run["pool"])))


def _device_kind(context: Context, pool: str) -> str:
    found = context.config.pools.get(pool)
    return found.device_kind if found is not None else "cuda"
