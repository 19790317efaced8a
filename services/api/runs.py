"""Runs: resolve the plan, store the run, queue its claim; cancel it (SPEC 2.3, 3.1)."""

from __future__ import annotations

from typing import Any

from services.api.auth import Principal, require_workload, visible
from services.api.branches import check_engine, check_restore
from services.api.claims import give_back_places, queue_for_devices, reserve_places
from services.api.context import Context
from services.api.datasets import visible_dataset
from services.api.grpo_plans import check_grpo_plan
from shared import reasons
from shared.config import DEFAULT_WORKLOADS
from shared.datasets import TEXT
from shared.errors import Conflict, Unprocessable, ValidationFailed
from shared.ids import Kind, new_id
from shared.lifecycle.runs import RUNS
from shared.plans import check_steps, check_target_modules, parse_plan
from shared.resolver import refuse_the_dataset_modality, resolve
from shared.states import RunStatus


def create_run(context: Context, *, body: Any, who: Principal) -> dict[str, Any]:
    plan = parse_plan(body)
    workload = plan["workload"] or who.default_workload(DEFAULT_WORKLOADS["run"])
    plan["workload"] = require_workload(workload)

    dataset = visible_dataset(context, plan["dataset"], who)
    validation = None
    if plan["validationDataset"]:
        validation = visible_dataset(context, plan["validationDataset"], who, field="validationDataset")
        if validation["format"] != dataset["format"]:
            raise ValidationFailed(
                f"validation dataset {validation['id']} holds {validation['format']} rows and dataset "
                f"{dataset['id']} holds {dataset['format']} rows; a run validates on rows of its training format",
                details={"field": "validationDataset"},
            )

    pool_name = plan["execution"]["pool"] or context.config.default_pool
    pool = context.config.pool(pool_name)
    if pool is None:
        raise ValidationFailed(f"pool {pool_name} does not exist in this deployment",
                               details={"field": "execution.pool", "pools": list(context.config.pools)})
    plan["execution"]["pool"] = pool_name
    gpus = plan["execution"]["gpus"]
    quota = pool.quotas.get(workload)
    if quota is not None and gpus > quota:
        raise Unprocessable(
            reasons.gpus_exceed_quota(gpus=gpus, workload=workload, pool=pool_name, quota_gpus=quota),
            details={"field": "execution.gpus", "quota": quota},
        )
    judge_workloads = check_grpo_plan(context, plan, who)
    model = context.catalog.describe(context.catalog.check_loadable(plan["model"]))
    check_target_modules(plan, model)  # 400 naming the modules the model has
    check_steps(plan, dataset_rows=dataset["rows"])
    parent = check_restore(context, plan, who)
    # refuses rows no engine of the method declares it trains on (400, details field "dataset")
    spec = resolve(plan, model=model, pool=pool, dataset_format=dataset["format"],
                   dataset_modality=dataset.get("modality") or TEXT)  # datasets stored before images: text
    if validation is not None:
        refuse_the_dataset_modality(validation["id"], model, validation.get("modality") or TEXT,
                                    field="validationDataset")
    batch, accumulation = plan["hyperparameters"]["batchSize"], plan["hyperparameters"]["gradientAccumulation"]
    if batch % (gpus * accumulation):  # else each GPU would train on a rounded share: another global batch
        raise ValidationFailed(reasons.batch_not_split(batch_size=batch, gpus=gpus, accumulation=accumulation),
                               details={"field": "hyperparameters.batchSize"})
    check_engine(parent, plan, spec.name)
    (claim_id,) = reserve_places(context, workload=workload)  # 429 past the workload's cap, nothing stored

    run = context.store.create({
        "id": new_id(Kind.RUN),
        "kind": "run",
        "name": plan.pop("name"),
        "workload": workload,
        **RUNS.created(),
        "detail": None,
        "plan": plan,
        "engine": spec.name,
        "pool": pool_name,
        "gpus": gpus,
        "datasetDigest": dataset["digest"],
        "validationDatasetDigest": validation["digest"] if validation else None,
        "progress": {"step": 0, "totalSteps": None, "loss": None, "firstLoss": None,
                     "tokensPerSecond": None, "etaSeconds": None},
        "scheduling": {"claim": None, "pool": pool_name, "node": None, "devices": [], "position": None},
        "snapshots": [],
        "latestSnapshot": None,
        "cancelRequested": False,
        "pauseRequested": False,
        "attempts": 0,
        "judgeWorkloads": judge_workloads,
        "parent": ({"snapshot": parent["id"], "run": parent.get("run"), "restore": plan["restore"]["what"]}
                   if parent else None),
        "startedAt": None,
        "finishedAt": None,
    })
    return queue_for_devices(context, run, kind="run", claim_id=claim_id,
                             event=f"queued in pool {pool_name} for {gpus} GPU(s); engine {spec.name}")


def get_run(context: Context, run_id: str) -> dict[str, Any]:
    doc = context.store.get(run_id)
    return visible(doc if doc and doc.get("kind") == "run" else None, "run", run_id)


def cancel_run(context: Context, run_id: str) -> dict[str, Any]:
    get_run(context, run_id)
    released: list[str] = []

    def cancel(doc: dict[str, Any]) -> dict[str, Any]:
        status = RunStatus(doc["status"])
        if status.is_terminal:
            raise Conflict(f"run {run_id} has already ended ({status})", details={"status": status})
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
    context.store.add_event(run_id, "cancel requested by the user" if doc["status"] != "CANCELLED"
                            else "cancelled by the user")
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
    context.store.add_event(run_id, "pause requested by the user")
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
                             event=f"resumed by the user; queued in pool {run['pool']} for {run['gpus']} GPU(s)")
