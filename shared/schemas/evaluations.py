"""The bodies of POST /v1/evaluations and POST /v1/comparisons (SPEC 7): one schema each, with
help text per field, and a parser that names the first wrong field like the run plan's does."""

from __future__ import annotations

from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate

from shared import reasons
from shared.errors import ValidationFailed
from shared.plans import MAX_GPUS, WORKLOAD_PATTERN, FullMatch, RewardSchema, _flatten, count

_WORKLOAD = FullMatch(WORKLOAD_PATTERN)


class EvaluationCreateSchema(Schema):
    class Meta:
        unknown = RAISE

    model = fields.String(required=True, metadata={"description": "base-model id from the catalog"})
    snapshot = fields.String(load_default=None, allow_none=True,
                             metadata={"description": "score this snapshot's adapter over the model; "
                                                      "none scores the base model"})
    dataset = fields.String(required=True, metadata={"description": "dataset (id or name): chat, completion or prompt rows"})
    gpus = count(load_default=1, minimum=1, maximum=MAX_GPUS, why="GPUs of one node",
                 description="GPUs (or CPU slots) of one node it scores on")
    pool = fields.String(load_default=None, allow_none=True,
                         metadata={"description": "pool to queue in; default: the deployment's default pool"})
    judge = fields.String(load_default=None, allow_none=True,
                          metadata={"description": "an endpoint (its id, or the name of a live endpoint) whose "
                                                   "answer to each (prompt, completion) is parsed as a score"})
    workload = fields.String(load_default=None, allow_none=True, validate=_WORKLOAD,
                             metadata={"description": "the quota group it counts against (default: evaluations)"})
    rewards = fields.List(fields.Nested(RewardSchema), load_default=None, allow_none=True,
                          metadata={"description": "reward functions to score completions with, built-in or "
                                                   "registered by the deployment (`{function, ...parameters}` as "
                                                   "in a grpo plan); default: exact_match where rows carry "
                                                   "answers"})
    maxTokens = count(load_default=None, allow_none=True, minimum=1, maximum=4096, why="the longest completion "
                      "an evaluation scores", description="most tokens of each greedy completion; default: what its "
                      "rows need, the longest reference plus a margin (16 tokens, or a quarter of it if more); "
                      "without references, the model's max_new_tokens or the deployment's limit (1024)")


class ComparisonCreateSchema(Schema):
    class Meta:
        unknown = RAISE

    snapshots = fields.List(fields.String(), required=True, validate=validate.Length(min=1, max=16),
                            metadata={"uniqueItems": True,
                                      "description": "the snapshots to compare (a parent and its branches), "
                                                     "all of one base model: at least 2, or 1 with `base`"})
    base = fields.Boolean(load_default=False, metadata={
        "description": "also score the snapshots' base model without an adapter, as a row of its own"})
    dataset = fields.String(required=True, metadata={"description": "dataset (id or name) every snapshot is scored on"})
    pool = fields.String(load_default=None, allow_none=True,
                         metadata={"description": "pool its evaluations queue in; default: the default pool"})
    workload = fields.String(load_default=None, allow_none=True, validate=_WORKLOAD,
                             metadata={"description": "the quota group of its evaluations (default: evaluations)"})
    maxTokens = count(load_default=None, allow_none=True, minimum=1, maximum=4096,
                      why="the longest completion an evaluation scores",
                      description="most tokens of each greedy completion; default: what the rows need, as "
                                  "an evaluation's maxTokens")


def _parse(schema: Schema, body: Any, what: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ValidationFailed(reasons.body_not_an_object(what), details={"fields": {}})
    try:
        return schema.load(body)
    except ValidationError as exc:
        fields_ = _flatten(exc.messages)
        first, problems = next(iter(fields_.items()))
        raise ValidationFailed(reasons.body_field_refused(what, first, problems[0]),
                               details={"field": first, "fields": fields_}) from None


def parse_evaluation(body: Any) -> dict[str, Any]:
    spec = _parse(EvaluationCreateSchema(), body, "evaluation")
    for i, reward in enumerate(spec["rewards"] or []):
        if reward.get("judge"):
            raise ValidationFailed(reasons.body_field_refused("evaluation", f"rewards.{i}.judge",
                                                              reasons.EVALUATION_REWARD_JUDGE),
                                   details={"field": f"rewards.{i}.judge",
                                            "fields": {f"rewards.{i}.judge": ["not here"]}})
    return spec


def parse_comparison(body: Any) -> dict[str, Any]:
    spec = _parse(ComparisonCreateSchema(), body, "comparison")
    if len(spec["snapshots"]) + spec["base"] < 2:
        raise ValidationFailed(reasons.body_field_refused("comparison", "snapshots", reasons.COMPARISON_ONE_ROW),
                               details={"field": "snapshots", "fields": {"snapshots": ["one row"]}})
    if len(set(spec["snapshots"])) != len(spec["snapshots"]):
        raise ValidationFailed(reasons.body_field_refused("comparison", "snapshots", reasons.COMPARISON_SNAPSHOT_TWICE),
                               details={"field": "snapshots", "fields": {"snapshots": ["duplicate"]}})
    return spec
