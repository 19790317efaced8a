"""The run plan (SPEC 2.3): one marshmallow schema per part, field help in `metadata` so the
OpenAPI document and the CLI help come from the same declaration.

`parse_plan(body)` validates a request body and returns the plan with every default filled in,
or raises ValidationFailed naming each field that is wrong. `plan_default(*path)` is such a
default, for code that reads a plan stored before one of its fields existed.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from marshmallow import EXCLUDE, INCLUDE, RAISE, Schema, ValidationError, fields, missing, validate, validates_schema

from shared import reasons
from shared.errors import ValidationFailed
from shared.rewards import ENTRY_KEYS

METHODS = ("sft", "grpo")
PRECISIONS = ("fp32", "bf16", "fp16")
RESTORE_KINDS = ("weights", "trainingState")
# A plan that gives neither maxSteps nor epochs trains one pass over its dataset.
EPOCHS_WITHOUT_MAX_STEPS = 1.0


class ExecutionSchema(Schema):
    class Meta:
        unknown = RAISE

    gpus = fields.Integer(load_default=1, validate=validate.Range(min=1, max=64),
                          metadata={"description": "GPUs (or CPU slots) of one node the run trains on"})
    pool = fields.String(load_default=None, allow_none=True,
                         metadata={"description": "pool to queue in; default: the deployment's default pool"})


class AdapterSchema(Schema):
    class Meta:
        unknown = RAISE

    rank = fields.Integer(load_default=8, validate=validate.Range(min=1, max=1024),
                          metadata={"description": "LoRA rank r"})
    alpha = fields.Float(load_default=16.0, validate=validate.Range(min=0, min_inclusive=False),
                         metadata={"description": "LoRA alpha (scaling = alpha / rank)"})
    dropout = fields.Float(load_default=0.0, validate=validate.Range(min=0, max=1, max_inclusive=False),
                           metadata={"description": "LoRA dropout"})
    targetModules = fields.Raw(load_default="all-linear",
                               metadata={"description": "module names to adapt, or \"all-linear\""})

    @validates_schema
    def _targets(self, data: dict[str, Any], **_: Any) -> None:
        targets = data.get("targetModules")
        ok = targets == "all-linear" or (
            isinstance(targets, list) and targets and all(isinstance(t, str) and t for t in targets)
        )
        if not ok:
            raise ValidationError('must be "all-linear" or a non-empty list of module names', "targetModules")


class HyperparametersSchema(Schema):
    class Meta:
        unknown = RAISE

    learningRate = fields.Float(load_default=2e-3, validate=validate.Range(min=0, max=1, min_inclusive=False),
                                metadata={"description": "peak learning rate"})
    epochs = fields.Float(load_default=None, allow_none=True, validate=validate.Range(min=0, min_inclusive=False),
                          metadata={"description": "passes over the dataset (ignored when maxSteps is set)"})
    maxSteps = fields.Integer(load_default=None, allow_none=True, validate=validate.Range(min=1, max=10_000_000),
                              metadata={"description": "optimizer steps to train"})
    batchSize = fields.Integer(load_default=8, validate=validate.Range(min=1, max=65536),
                               metadata={"description": "global batch size, the same whatever the GPU count"})
    gradientAccumulation = fields.Integer(load_default=1, validate=validate.Range(min=1, max=1024),
                                          metadata={"description": "micro-batches per optimizer step"})
    warmupSteps = fields.Integer(load_default=0, validate=validate.Range(min=0),
                                 metadata={"description": "linear warm-up steps"})
    seed = fields.Integer(load_default=42, metadata={"description": "random seed"})
    maxSeqLength = fields.Integer(load_default=512, validate=validate.Range(min=8, max=1_048_576),
                                  metadata={"description": "longest tokenized row; longer rows are cut"})

    @validates_schema
    def _length(self, data: dict[str, Any], **_: Any) -> None:
        if data.get("batchSize", 1) % data.get("gradientAccumulation", 1):
            raise ValidationError("must be a multiple of gradientAccumulation", "batchSize")


class RewardSchema(Schema):
    """`{function: NAME, weight, ...parameters}` or `{judge: ENDPOINT_ID, weight}`. Every other key is
    a parameter of the function, kept as given: which ones a function takes is checked by
    `shared.rewards.check_rewards`, which knows the deployment's registered functions. Here they need
    only be JSON values, since the plan stores them. The built-in functions' parameters are declared
    for their help text."""

    class Meta:
        unknown = INCLUDE

    function = fields.String(load_default=None, allow_none=True, metadata={"description": "reward function name"})
    judge = fields.String(load_default=None, allow_none=True, metadata={"description": "judge endpoint id"})
    weight = fields.Float(load_default=1.0, metadata={"description": "what this reward counts for in the total"})
    field = fields.Raw(metadata={"description": "exact_match: the dataset field to match (default answer)"})
    pattern = fields.Raw(metadata={"description": "regex: the pattern the whole completion must match"})
    target = fields.Raw(metadata={"description": "length: the target length in characters"})

    @validates_schema
    def _json_parameters(self, data: dict[str, Any], **_: Any) -> None:
        for name, value in data.items():
            bad = _non_json(value)
            if name not in ENTRY_KEYS and bad:
                raise ValidationError(reasons.reward_parameter_not_json(bad[0]), name)


def _non_json(value: Any) -> list[Any]:
    """The parts of a value that are not JSON (itself, or items or keys within it); empty when it is JSON."""
    if value is None or isinstance(value, (str, bool, int)):
        return []
    if isinstance(value, float):
        return [] if math.isfinite(value) else [value]
    if isinstance(value, list):
        return [bad for item in value for bad in _non_json(item)]
    if isinstance(value, dict):
        return [k for k in value if not isinstance(k, str)] + [bad for v in value.values() for bad in _non_json(v)]
    return [value]


class GrpoSchema(Schema):
    class Meta:
        unknown = RAISE

    klPenalty = fields.Float(load_default=0.0, validate=validate.Range(min=0),
                             metadata={"description": "KL penalty beta; 0 keeps no reference policy"})
    numGenerations = fields.Integer(load_default=4, validate=validate.Range(min=2, max=256),
                                    metadata={"description": "completions sampled per prompt (a group)"})
    maxCompletionLength = fields.Integer(load_default=64, validate=validate.Range(min=1, max=65536),
                                         metadata={"description": "longest completion, in tokens"})
    temperature = fields.Float(load_default=1.0, validate=validate.Range(min=0),
                               metadata={"description": "sampling temperature of the rollouts"})
    rewards = fields.List(fields.Nested(RewardSchema), load_default=list,
                          metadata={"description": "at least one: {function, weight, ...its parameters} or "
                                                   "{judge, weight}"})


class RestoreSchema(Schema):
    class Meta:
        unknown = RAISE

    snapshot = fields.String(required=True, metadata={"description": "snapshot id to branch from"})
    what = fields.String(required=True, validate=validate.OneOf(RESTORE_KINDS),
                         metadata={"description": "weights or trainingState"})


class SnapshotPolicySchema(Schema):
    class Meta:
        unknown = RAISE

    everySteps = fields.Integer(load_default=None, allow_none=True, validate=validate.Range(min=1),
                                metadata={"description": "write a snapshot every N steps (always one at the end)"})


class ValidationPolicySchema(Schema):
    class Meta:
        unknown = RAISE

    everySteps = fields.Integer(load_default=None, allow_none=True, validate=validate.Range(min=1),
                                metadata={"description": "score validationDataset every N steps (always at the "
                                                         "end); default: the snapshot interval, else only at the end"})


class PlanSchema(Schema):
    class Meta:
        unknown = RAISE

    method = fields.String(load_default="sft", validate=validate.OneOf(METHODS),
                           metadata={"description": "sft or grpo"})
    model = fields.String(required=True, metadata={"description": "base-model id from the catalog"})
    dataset = fields.String(required=True, metadata={"description": "dataset id"})
    validationDataset = fields.String(load_default=None, allow_none=True,
                                      metadata={"description": "dataset id scored for validation loss as the run trains"})
    validation = fields.Nested(ValidationPolicySchema, load_default=lambda: ValidationPolicySchema().load({}))
    precision = fields.String(load_default="fp32", validate=validate.OneOf(PRECISIONS))
    execution = fields.Nested(ExecutionSchema, load_default=lambda: ExecutionSchema().load({}))
    adapter = fields.Nested(AdapterSchema, load_default=lambda: AdapterSchema().load({}))
    hyperparameters = fields.Nested(HyperparametersSchema, load_default=lambda: HyperparametersSchema().load({}))
    grpo = fields.Nested(GrpoSchema, load_default=None, allow_none=True)
    restore = fields.Nested(RestoreSchema, load_default=None, allow_none=True)
    snapshots = fields.Nested(SnapshotPolicySchema, load_default=lambda: SnapshotPolicySchema().load({}))
    workload = fields.String(load_default=None, allow_none=True,
                             validate=validate.Regexp(r"^[A-Za-z0-9_.-]{1,64}$"),
                             metadata={"description": "quota group; default runs"})
    name = fields.String(load_default=None, allow_none=True, validate=validate.Length(max=200))


def _flatten(messages: Any, prefix: str = "") -> dict[str, list[str]]:
    flat: dict[str, list[str]] = {}
    if isinstance(messages, dict):
        for key, value in messages.items():
            path = f"{prefix}.{key}" if prefix and key != "_schema" else (prefix or str(key))
            flat.update(_flatten(value, path))
    elif isinstance(messages, list) and all(isinstance(m, str) for m in messages):
        flat[prefix or "plan"] = list(messages)
    else:
        flat[prefix or "plan"] = [str(messages)]
    return flat


def parse_plan(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ValidationFailed("the plan must be a JSON object", details={"fields": {}})
    try:
        plan = PlanSchema().load(body)
    except ValidationError as exc:
        fields_ = _flatten(exc.messages)
        first, problems = next(iter(fields_.items()))
        raise ValidationFailed(f"plan field {first}: {problems[0]}", details={"fields": fields_}) from None
    hp = plan["hyperparameters"]
    if hp["maxSteps"] is None and hp["epochs"] is None:
        hp["epochs"] = EPOCHS_WITHOUT_MAX_STEPS
    if plan["method"] == "grpo" and plan["grpo"] is None:
        plan["grpo"] = GrpoSchema().load({})
    return plan


@functools.cache
def _schema() -> Schema:
    return PlanSchema()  # only its field declarations are read


def plan_default(*path: str) -> Any:
    """What `parse_plan` fills in for the field at `path` when a request leaves it out, from the
    schema's own `load_default`: `plan_default("hyperparameters", "learningRate")`,
    `plan_default("precision")`, `plan_default("grpo", "rewards", "weight")` (a list's items).

    For readers of plans stored before a field existed: they fall back to the same default a plan
    submitted now gets. A field without a default (`model`) raises KeyError naming it."""
    schema = _schema()
    field_ = None
    for depth, name in enumerate(path):
        if name not in schema.fields:
            raise KeyError(".".join(path[: depth + 1]))
        field_ = schema.fields[name]
        if depth < len(path) - 1:
            inner = field_.inner if isinstance(field_, fields.List) else field_
            if not isinstance(inner, fields.Nested):
                raise KeyError(".".join(path[: depth + 2]))
            schema = inner.schema
    default = field_.load_default if field_ is not None else missing
    if default is missing:
        raise KeyError(f"plan field {'.'.join(path)} has no default")
    return default() if callable(default) else default


__all__ = ["PlanSchema", "parse_plan", "plan_default", "METHODS", "PRECISIONS", "RESTORE_KINDS", "EXCLUDE",
           "EPOCHS_WITHOUT_MAX_STEPS"]
