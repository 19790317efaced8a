"""What a grpo plan must hold beyond its schema (SPEC 2.3, 4), checked at submission so that a run
that could never score its completions is refused with a 4xx naming the field, not queued."""

from __future__ import annotations

from typing import Any

from services.api.auth import Principal
from services.api.context import Context
from shared import reasons
from shared.endpoint_names import find_endpoint
from shared.errors import NotFound, Unprocessable, ValidationFailed
from shared.rewards import check_rewards
from shared.states import EndpointPhase


def check_grpo_plan(context: Context, plan: dict[str, Any], who: Principal) -> dict[str, str]:
    """Refuse a grpo plan that could not be carried out. Returns the workload of each judge the plan
    names (by id or name): the run's worker looks a judge's name up in that workload only, as this
    token saw it (names are per workload, shared/endpoint_names.py)."""
    grpo = plan.get("grpo")
    if plan["method"] != "grpo":
        if grpo is not None:
            raise ValidationFailed(reasons.grpo_on_sft_run(plan["method"]), details={"field": "grpo"})
        return {}
    if plan.get("validationDataset"):
        raise ValidationFailed(reasons.GRPO_NO_VALIDATION, details={"field": "validationDataset"})
    rewards = grpo["rewards"]
    if not rewards:
        raise ValidationFailed(reasons.GRPO_NEEDS_REWARDS, details={"field": "grpo.rewards"})
    check_rewards(rewards, registered=context.config.reward_functions)
    batch, generations = plan["hyperparameters"]["batchSize"], grpo["numGenerations"]
    if batch % generations:
        raise ValidationFailed(reasons.grpo_batch_not_a_multiple(batch_size=batch, generations=generations),
                               details={"field": "hyperparameters.batchSize"})
    return {entry["judge"]: _check_judge(context, entry["judge"], who, field=f"grpo.rewards.{i}.judge")
            for i, entry in enumerate(rewards) if entry.get("judge")}


def _check_judge(context: Context, judge: str, who: Principal, *, field: str) -> str:
    """The judge is an endpoint (its id, or the name of a live one) this token may use, not ended;
    returns its workload."""
    doc = find_endpoint(context.store, judge, workloads=who.name_scope)
    if doc is None or not who.may_use(doc.get("workload", "")):
        raise NotFound(reasons.evaluation_judge_unknown(judge), details={"field": field})
    if EndpointPhase(doc["phase"]).is_terminal:
        raise Unprocessable(reasons.evaluation_judge_ended(judge, doc["phase"]), details={"field": field})
    return doc["workload"]
