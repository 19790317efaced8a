"""The one judge of a run plan (SPEC 2.3, 3.1, 3.3): `check(plan, facts)` holds every rule that
spans fields or needs the deployment, and names the engine that trains what it accepts.

The schema (schema.py) has already judged each field on its own. What is left needs more than the
plan: the datasets it names, the pool and its quotas, the deployment's reward functions and judges,
the model's catalog entry, the snapshot a branch restores. The API looks those up (`PlanFacts`,
services/api/plan_facts.py) and hands them over; nothing here reads Redis, the catalog or a file.
A fact is asked for only once a rule needs it, so the lookups' own refusals (an unknown dataset,
model or snapshot: 404) come where they always came among the rules.

Each refusal raises the project's error (400 ValidationFailed for a plan that contradicts itself or
names what does not exist, 422 Unprocessable for one this deployment cannot carry out, 404 for a
judge the caller cannot see) with its sentence from shared/reasons.py and the field in `details`.
The engines trust what passed: they check none of it again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol

from shared import reasons
from shared.config import Pool
from shared.datasets import TEXT
from shared.engines import EngineSpec
from shared.judges import accept_judge
from shared.model_facts import refuse_unusable
from shared.errors import NotFound, Unprocessable, ValidationFailed
from shared.plans.schema import MAX_STEPS
from shared.plans.training_plan import TrainingPlan
from shared.resolver import refuse_the_dataset_modality, resolve
from shared.rewards import check_rewards

WEIGHTS, TRAINING_STATE = "weights", "trainingState"


class PlanFacts(Protocol):
    """What `check` needs to know beyond the plan. Each lookup may raise the API's own refusal
    (an unknown or unreadable dataset, model or snapshot)."""

    def dataset(self) -> Mapping[str, Any]:
        """The plan's dataset: its `format`, `modality` (absent: text), `rows`, `id`."""

    def validation_dataset(self) -> Mapping[str, Any]:
        """The plan's validationDataset, alike (asked only when the plan names one)."""

    def pool(self, name: str) -> Pool | None:
        """The deployment's pool of that name, None when it has none."""

    def pool_names(self) -> list[str]:
        """Every pool of the deployment."""

    def reward_functions(self) -> Mapping[str, str]:
        """The deployment's registered reward functions: name -> "package.module:function"."""

    def judge(self, name: str) -> Mapping[str, Any] | None:
        """The endpoint a reward names as its judge (its id, or the name of a live one) that the
        caller may use; None when there is none."""

    def model(self) -> Mapping[str, Any]:
        """The catalog entry of the plan's model, once it is known to load."""

    def snapshot(self, snapshot_id: str) -> Mapping[str, Any]:
        """The snapshot a branch restores."""

    def readable(self, snapshot: Mapping[str, Any]) -> Mapping[str, bool]:
        """Which parts (weights, trainingState) of the snapshot this deployment reads."""

    def damage(self, snapshot: Mapping[str, Any], part: str) -> Any:
        """The first damaged file of a snapshot's part, checked file by file, sha256 included
        (shared/snapshot_files.py `Damage`: file, problem), or None. Asked last: it reads the files."""


@dataclass(frozen=True)
class Accepted:
    """What `check` found of a plan it accepts, for the run the API stores."""

    engine: EngineSpec
    parent: Mapping[str, Any] | None = None  # the snapshot a branch restores
    step_range: dict[str, Any] = field(default_factory=dict)  # how long it trains (`step_range`)
    judge_workloads: dict[str, str] = field(default_factory=dict)  # judge (id or name) -> its workload


def check(plan: TrainingPlan, facts: PlanFacts) -> Accepted:
    """Refuse `plan` with the first rule it breaks, in the order users have always met them, or
    return the engine that trains it and what the run records of its judges and parent. The plan's
    pool and workload are filled in (the API's defaults) before it is judged."""
    dataset = facts.dataset()
    validation = None
    if plan.validation_dataset:
        validation = facts.validation_dataset()
        _same_format(validation, dataset)
    pool = _pool(plan, facts)
    _within_quota(plan, pool)
    judge_workloads = _grpo_settings(plan, facts)
    model = facts.model()
    refuse_unusable(dict(model), dataset=dataset["id"], dataset_format=dataset["format"])
    _target_modules(plan, model)
    _steps(plan, dataset_rows=int(dataset["rows"]))
    parent = _restore(plan, facts)
    _trains_a_step(plan, parent, dataset_rows=int(dataset["rows"]))
    # the engine that trains it, or why none does (400 for rows no engine of the method trains on)
    engine = resolve(plan, model=model, pool=pool, dataset_format=dataset["format"],
                     dataset_modality=dataset.get("modality") or TEXT)  # datasets stored before images: text
    if validation is not None:
        refuse_the_dataset_modality(validation["id"], model, validation.get("modality") or TEXT,
                                    field="validationDataset")
    _packing_takes_no_images(plan, dataset)
    _batch_splits(plan)
    _same_engine(plan, parent, engine.name)
    return Accepted(engine=engine, parent=parent, judge_workloads=judge_workloads,
                    step_range=step_range(plan, parent, dataset_rows=int(dataset["rows"])))


# --- The datasets, the pool


def _same_format(validation: Mapping[str, Any], dataset: Mapping[str, Any]) -> None:
    if validation["format"] != dataset["format"]:
        raise ValidationFailed(
            reasons.validation_format_differs(validation=validation["id"], validation_format=validation["format"],
                                              dataset=dataset["id"], dataset_format=dataset["format"]),
            details={"field": "validationDataset"})


def _pool(plan: TrainingPlan, facts: PlanFacts) -> Pool:
    pool = facts.pool(plan.execution.pool)
    if pool is None:
        # 404, as every request naming a pool the deployment lacks (shared/claims/fits.py pool_named)
        raise NotFound(reasons.pool_unknown(plan.execution.pool),
                       details={"field": "execution.pool", "pool": plan.execution.pool, "pools": facts.pool_names()})
    return pool


def _within_quota(plan: TrainingPlan, pool: Pool) -> None:
    gpus, quota = plan.execution.gpus, pool.quotas.get(plan.workload)
    if quota is not None and gpus > quota:
        raise Unprocessable(
            reasons.gpus_exceed_quota(gpus=gpus, workload=plan.workload, pool=pool.name, quota_gpus=quota),
            details={"field": "execution.gpus", "quota": quota},
        )


# --- GRPO: settings only a grpo run takes, rewards that can be scored, judges it may use


def _grpo_settings(plan: TrainingPlan, facts: PlanFacts) -> dict[str, str]:
    """Returns the workload of each judge the plan names (by id or name): the run's worker looks a
    judge's name up in that workload only, as the caller saw it (shared/endpoint_names.py)."""
    if not plan.is_grpo:
        if plan.grpo is not None:
            raise ValidationFailed(reasons.grpo_on_sft_run(plan.method), details={"field": "grpo"})
        return {}
    if plan.validation_dataset:
        raise ValidationFailed(reasons.GRPO_NO_VALIDATION, details={"field": "validationDataset"})
    grpo = plan.grpo_settings
    if not grpo.rewards:
        raise ValidationFailed(reasons.GRPO_NEEDS_REWARDS, details={"field": "grpo.rewards"})
    check_rewards(grpo.reward_entries, registered=facts.reward_functions())
    batch, generations = plan.hyperparameters.batch_size, grpo.num_generations
    if batch % generations:
        raise ValidationFailed(reasons.grpo_batch_not_a_multiple(batch_size=batch, generations=generations),
                               details={"field": "hyperparameters.batchSize"})
    # a judge is an endpoint the caller may use, not ended (refused as an evaluation's judge is)
    return {reward.judge: accept_judge(facts.judge(reward.judge), reward.judge, field=f"grpo.rewards.{i}.judge")
            for i, reward in enumerate(grpo.rewards) if reward.judge}


# --- The model and the length of the run


def _target_modules(plan: TrainingPlan, model: Mapping[str, Any]) -> None:
    """adapter.targetModules names modules of the model (its catalog entry's loraTargetModules, which
    follow from a built-in model's spec or a real entry's config), so a run is refused now rather
    than failing in the worker when PEFT finds no such module. "all-linear" fits every model."""
    if plan.adapter.every_linear_layer:
        return
    modules = list(model.get("loraTargetModules") or [])
    unknown = [t for t in dict.fromkeys(plan.adapter.target_modules) if t not in modules]
    if unknown:
        raise ValidationFailed(
            reasons.plan_field_refused("adapter.targetModules", reasons.target_modules_unknown(
                model=model["id"], unknown=unknown, modules=modules)),
            details={"field": "adapter.targetModules", "unknown": unknown, "modules": modules})


def steps_by_epochs(plan: TrainingPlan, *, dataset_rows: int) -> int:
    """The steps a plan by epochs makes: epochs x rows / batchSize (a grpo step trains on batchSize
    completions, numGenerations per row). An estimate: the engine counts the rows it trains on (an
    sft run's packed sequences, rows its maxSeqLength leaves without a trained token)."""
    hp = plan.hyperparameters
    per_row = plan.grpo_settings.num_generations if plan.is_grpo else 1
    return math.ceil((hp.epochs or 0) * max(dataset_rows, 1) * per_row / hp.batch_size)


def end_step(plan: TrainingPlan, *, dataset_rows: int) -> int:
    """The step a run of `plan` ends at, on its own step count (docs/api.md "How long a run
    trains"): maxSteps, else what its epochs make (estimated, `steps_by_epochs`)."""
    hp = plan.hyperparameters
    return hp.max_steps if hp.max_steps is not None else steps_by_epochs(plan, dataset_rows=dataset_rows)


def start_step(plan: TrainingPlan, parent: Mapping[str, Any] | None) -> int:
    """The step a run of `plan` starts from: a trainingState branch continues its snapshot's step
    count; a fresh run and a weights branch (a fresh optimizer over an inherited adapter) count from 0."""
    if parent is None or plan.restore_kind != TRAINING_STATE:
        return 0
    return int(parent.get("step") or 0)


def step_range(plan: TrainingPlan, parent: Mapping[str, Any] | None, *, dataset_rows: int) -> dict[str, Any]:
    """What the run's JSON says of how long it trains (`stepRange`): the step it starts from, the
    step it ends at, the steps it trains, and whether that is an estimate (a plan by epochs)."""
    start, end = start_step(plan, parent), end_step(plan, dataset_rows=dataset_rows)
    return {"startStep": start, "endStep": end, "newSteps": max(end - start, 0),
            "estimated": plan.hyperparameters.max_steps is None}


def _steps(plan: TrainingPlan, *, dataset_rows: int) -> None:
    """A plan that trains by epochs makes epochs x rows / batchSize steps: at most MAX_STEPS, like maxSteps."""
    hp = plan.hyperparameters
    if hp.max_steps is not None or not hp.epochs:
        return
    steps = steps_by_epochs(plan, dataset_rows=dataset_rows)
    if steps > MAX_STEPS:
        raise ValidationFailed(
            reasons.plan_field_refused("hyperparameters.epochs", reasons.epochs_too_many_steps(
                epochs=hp.epochs, rows=dataset_rows, batch_size=hp.batch_size, steps=steps, max_steps=MAX_STEPS)),
            details={"field": "hyperparameters.epochs", "steps": steps, "maxSteps": MAX_STEPS})


def _packing_takes_no_images(plan: TrainingPlan, dataset: Mapping[str, Any]) -> None:
    """sft packs rows into shared sequences only without images (an image's tokens cannot be cut
    across sequences); grpo does not pack."""
    if plan.hyperparameters.packing and not plan.is_grpo and (dataset.get("modality") or TEXT) != TEXT:
        raise ValidationFailed(reasons.IMAGE_ROWS_NOT_PACKED, details={"field": "hyperparameters.packing"})


def _batch_splits(plan: TrainingPlan) -> None:
    """batchSize is the global batch: each GPU would otherwise train on a rounded share, another batch."""
    hp, gpus = plan.hyperparameters, plan.execution.gpus
    if hp.split_remainder(gpus):
        raise ValidationFailed(
            reasons.batch_not_split(batch_size=hp.batch_size, gpus=gpus, accumulation=hp.gradient_accumulation),
            details={"field": "hyperparameters.batchSize"})


# --- Branches (SPEC 3.3): what a plan may restore


def _restore(plan: TrainingPlan, facts: PlanFacts) -> Mapping[str, Any] | None:
    """The snapshot `plan` restores, after every rule of SPEC 3.3 holds; None for a fresh run."""
    if plan.restore is None:
        return None
    snap = facts.snapshot(plan.restore.snapshot)
    readable = facts.readable(snap)
    details = {"field": "restore", "snapshot": snap["id"]}
    if not readable.get(WEIGHTS):
        raise Unprocessable(reasons.WEIGHTS_UNREADABLE, details=details)
    if snap.get("model") and snap["model"] != plan.model:
        raise Unprocessable(reasons.branch_other_model(snapshot_id=snap["id"], snapshot_model=snap["model"],
                                                       plan_model=plan.model), details=details)
    if plan.restore.what == WEIGHTS:
        _intact(facts, snap, WEIGHTS)  # last: its files are read whole
        return snap
    if not (snap.get("contents") or {}).get(TRAINING_STATE):
        raise Unprocessable(reasons.snapshot_has_no_training_state(snap["id"]), details=details)
    if not readable.get(TRAINING_STATE):
        raise Unprocessable(reasons.TRAINING_STATE_UNREADABLE, details=details)
    gpus = plan.execution.gpus
    if snap["gpus"] != gpus:
        raise Unprocessable(reasons.training_state_gpu_mismatch(saved_gpus=snap["gpus"], run_gpus=gpus),
                            details={**details, "savedGpus": snap["gpus"], "gpus": gpus})
    for what, planned in (("method", plan.method), ("precision", plan.precision)):
        if snap.get(what) and snap[what] != planned:
            raise Unprocessable(reasons.branch_changes(what=what, parent=snap[what], plan=planned), details=details)
    _intact(facts, snap, WEIGHTS)  # last: its files are read whole
    _intact(facts, snap, TRAINING_STATE)
    return snap


def _trains_a_step(plan: TrainingPlan, parent: Mapping[str, Any] | None, *, dataset_rows: int) -> None:
    """A plan that would train no step is refused (issue 30): only a trainingState branch can be one,
    since it continues its snapshot's step count and maxSteps is the step a run ends at. A plan by
    epochs is judged by its estimate; the engine refuses to end SUCCEEDED having trained nothing."""
    start = start_step(plan, parent)
    end = end_step(plan, dataset_rows=dataset_rows)
    if parent is None or end > start:
        return
    hp = plan.hyperparameters
    if hp.max_steps is not None:
        planned, field_ = reasons.planned_by_steps(hp.max_steps), "hyperparameters.maxSteps"
    else:
        planned = reasons.planned_by_epochs(epochs=hp.epochs, rows=dataset_rows, batch_size=hp.batch_size, steps=end)
        field_ = "hyperparameters.epochs"
    raise ValidationFailed(
        reasons.branch_trains_no_step(snapshot_id=parent["id"], snapshot_step=start, planned=planned),
        details={"field": field_, "startStep": start, "endStep": end})


def _intact(facts: PlanFacts, snapshot: Mapping[str, Any], part: str) -> None:
    refuse_damaged(snapshot, facts.damage(snapshot, part), field="restore")


def refuse_damaged(snapshot: Mapping[str, Any], found: Any, *, field: str) -> None:
    """A 422 naming the snapshot and the damaged file `found` (None: nothing found, nothing refused)."""
    if found is not None:
        raise Unprocessable(reasons.snapshot_damaged(snapshot["id"], found.file, found.problem),
                            details={"field": field, "snapshot": snapshot["id"], "file": found.file})


def _same_engine(plan: TrainingPlan, parent: Mapping[str, Any] | None, engine: str) -> None:
    """After resolution: a trainingState branch trains with its parent's engine."""
    if parent is None or plan.restore_kind != TRAINING_STATE:
        return
    if parent.get("engine") and parent["engine"] != engine:
        raise Unprocessable(reasons.branch_changes(what="engine", parent=parent["engine"], plan=engine),
                            details={"field": "restore", "snapshot": parent["id"]})
