"""The run plan's shape (SPEC 2.3): one marshmallow schema per part, field help in `metadata` so
the OpenAPI document and the CLI's flags (`cli_flag`) come from the same declaration.

`parse_plan(body)` validates a request body and returns the plan with every default filled in,
or raises ValidationFailed naming each field that is wrong. `plan_default(*path)` is such a
default, for training_plan.py to read a plan stored before one of its fields existed.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

from marshmallow import EXCLUDE, INCLUDE, RAISE, Schema, ValidationError, fields, missing, validate, validates_schema

from shared import labels, reasons
from shared.errors import ValidationFailed
from shared.names import WORKLOAD_PATTERN
from shared.rewards import ENTRY_KEYS

METHODS = ("sft", "grpo")
PRECISIONS = ("fp32", "bf16", "fp16")
RESTORE_KINDS = ("weights", "trainingState")
# A plan that gives neither maxSteps nor epochs trains one pass over its dataset.
EPOCHS_WITHOUT_MAX_STEPS = 1.0

# The bounds of the numeric fields: what the engines can honour, each saying why in its help text.
# Integer fields are strict (3.5 and "3" are refused, never rounded); floats are finite.
MAX_GPUS = 64  # the most devices one node has
MAX_STEPS = 10_000_000  # optimizer steps (and warm-up, snapshot and validation intervals)
MAX_EPOCHS = 10_000.0
MAX_SEED = 2**32 - 1  # torch, numpy and random all take a seed of 0 .. 2^32-1
MAX_RANK = 1024
# apispec writes Range(min_inclusive=False) as a plain minimum; the document says it is exclusive
ABOVE_MINIMUM = {"exclusiveMinimum": True}


def batch_remainder(batch: int, *, devices: int, accumulation: int) -> int:
    """The one batch-split rule (SPEC 3.2): batchSize is the global batch, split into `devices` x
    gradientAccumulation micro-batches of equal size; what is left over (0: it splits evenly)."""
    return batch % (devices * accumulation)


class FullMatch(validate.Regexp):
    """A Regexp validator that matches the whole string: marshmallow's `Regexp` uses re.match, whose
    `$` also matches before a trailing newline (`"chat\\n"` would pass). The OpenAPI document shows
    the same pattern, which JSON Schema reads as ECMAScript, where `$` is the very end."""

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, str) or self.regex.fullmatch(value) is None:
            raise ValidationError(self._format_error(value))
        return value


class JsonBoolean(fields.Boolean):
    """true or false, nothing else: marshmallow's own takes 1, "yes", "on" and the like."""

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> bool:
        if not isinstance(value, bool):
            raise self.make_error("invalid")
        return value


class JsonNumber(fields.Float):
    """A JSON number, nothing else: marshmallow's Float reads the string "0.1" as 0.1 (and "nan" as a
    number). true and false are refused by Float itself, infinities by allow_nan=False."""

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> float:
        if isinstance(value, str):
            raise ValidationError(reasons.NUMBER_NOT_A_STRING)
        return super()._deserialize(value, attr, data, **kwargs)


def count(*, minimum: int, maximum: int, why: str, **kw: Any) -> fields.Integer:
    """A whole-number field from `minimum` to `maximum`; its help text says the range and why."""
    description = kw.pop("description")
    return fields.Integer(strict=True, validate=validate.Range(min=minimum, max=maximum),
                          metadata={"description": f"{description} ({minimum} to {maximum}: {why})"}, **kw)


class ExecutionSchema(Schema):
    class Meta:
        unknown = RAISE

    gpus = count(load_default=1, minimum=1, maximum=MAX_GPUS, why="GPUs of one node",
                 description="GPUs (or CPU slots) of one node the run trains on")
    pool = fields.String(load_default=None, allow_none=True,
                         metadata={"description": "pool to queue in; default: the deployment's default pool"})


class AdapterSchema(Schema):
    class Meta:
        unknown = RAISE

    rank = count(load_default=8, minimum=1, maximum=MAX_RANK, why="past that it is hardly low-rank; vLLM serves "
                 "adapters up to 512", description="LoRA rank r")
    alpha = JsonNumber(load_default=16.0, validate=validate.Range(min=0, max=100_000, min_inclusive=False),
                         metadata={"description": "LoRA alpha (scaling = alpha / rank; above 0, at most 100000)",
                                   **ABOVE_MINIMUM})
    dropout = JsonNumber(load_default=0.0, validate=validate.Range(min=0, max=1, max_inclusive=False),
                           metadata={"description": "LoRA dropout (0 or more, below 1)", "exclusiveMaximum": True})
    targetModules = fields.Raw(load_default="all-linear",
                               metadata={"description": "module names to adapt, each one of the model's "
                                                        "loraTargetModules (GET /v1/base-models/MODEL), or "
                                                        "\"all-linear\""})

    @validates_schema
    def _targets(self, data: dict[str, Any], **_: Any) -> None:
        targets = data.get("targetModules")
        ok = targets == "all-linear" or (
            isinstance(targets, list) and targets and all(isinstance(t, str) and t for t in targets)
        )
        if not ok:
            raise ValidationError(reasons.TARGET_MODULES_SHAPE, "targetModules")


class HyperparametersSchema(Schema):
    class Meta:
        unknown = RAISE

    learningRate = JsonNumber(load_default=2e-3, validate=validate.Range(min=0, max=1, min_inclusive=False),
                                metadata={"description": "peak learning rate (above 0, at most 1)", **ABOVE_MINIMUM})
    epochs = JsonNumber(load_default=None, allow_none=True,
                          validate=validate.Range(min=0, max=MAX_EPOCHS, min_inclusive=False),
                          metadata={"description": "passes over the dataset (ignored when maxSteps is set; above 0, "
                                                   "at most 10000, and at most 10000000 steps: "
                                                   "epochs x rows / batchSize)", **ABOVE_MINIMUM})
    maxSteps = count(load_default=None, allow_none=True, minimum=1, maximum=MAX_STEPS,
                     why="months of training at the fastest step rate",
                     description="the optimizer step the run ends at. A fresh run and a weights branch count "
                                 "from step 0, so they train maxSteps steps; a trainingState branch continues its "
                                 "snapshot's step count and trains maxSteps minus the snapshot's step (the run's "
                                 "stepRange says how many)")
    batchSize = count(load_default=8, minimum=1, maximum=65536, why="rows a step can hold",
                      description="global batch size, the same whatever the GPU count")
    gradientAccumulation = count(load_default=1, minimum=1, maximum=1024, why="micro-batches a step can hold",
                                 description="micro-batches per optimizer step")
    warmupSteps = count(load_default=0, minimum=0, maximum=MAX_STEPS, why="as many as maxSteps may be",
                        description="linear warm-up steps: step k of W trains at k/(W+1) of learningRate (never "
                                    "0), then transformers' linear decay to the last step")
    seed = count(load_default=42, minimum=0, maximum=MAX_SEED, why="torch, numpy and random take 32-bit seeds",
                 description="random seed")
    maxSeqLength = count(load_default=512, minimum=8, maximum=1_048_576, why="the longest context of any model",
                         description="longest tokenized row; longer rows are cut")
    packing = JsonBoolean(
        load_default=False,
        metadata={"description": "sft: pack several rows into each sequence of up to maxSeqLength tokens (fewer "
                                 "padding tokens per step; no row attends to another). A step then holds batchSize "
                                 "packed sequences"})
    trainOnPrompt = JsonBoolean(
        load_default=False,
        metadata={"description": "sft: take the loss over every token of a row; by default (false) a chat row "
                                 "trains on its assistant turns and a prompt/completion row on its completion"})

    @validates_schema
    def _length(self, data: dict[str, Any], **_: Any) -> None:
        # the batch split on one device, before anything is looked up; check.py splits it over the
        # plan's GPUs too (training_plan.Hyperparameters.split_remainder, the one rule of both)
        if batch_remainder(data.get("batchSize", 1), devices=1, accumulation=data.get("gradientAccumulation", 1)):
            raise ValidationError(reasons.BATCH_NOT_A_MULTIPLE_OF_ACCUMULATION, "batchSize")


class RewardSchema(Schema):
    """`{function: NAME, weight, ...parameters}` or `{judge: ENDPOINT, weight}`. Every other key is
    a parameter of the function, kept as given: which ones a function takes is checked by
    `shared.rewards.check_rewards`, which knows the deployment's registered functions. Here they need
    only be JSON values, since the plan stores them. The built-in functions' parameters are declared
    for their help text."""

    class Meta:
        unknown = INCLUDE

    function = fields.String(load_default=None, allow_none=True, metadata={"description": "reward function name"})
    judge = fields.String(load_default=None, allow_none=True, metadata={"description": "judge endpoint: its id, or the name of a live endpoint"})
    weight = JsonNumber(load_default=1.0, validate=validate.Range(min=-1_000_000, max=1_000_000),
                          metadata={"description": "what this reward counts for in the total (-1000000 to 1000000, "
                                                   "so the weighted sum stays a finite float)"})
    # null is "not given", as the built-in functions read it
    field = fields.Raw(allow_none=True, metadata={
        "description": "exact_match: the dataset field to match (default answer)"})
    pattern = fields.Raw(allow_none=True, metadata={
        "description": "regex: the pattern the whole completion must match"})
    target = fields.Raw(allow_none=True, metadata={"description": "length: the target length in characters"})

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

    klPenalty = JsonNumber(load_default=0.0, validate=validate.Range(min=0, max=1000),
                             metadata={"description": "KL penalty beta; 0 keeps no reference policy (at most 1000)"})
    numGenerations = count(load_default=4, minimum=2, maximum=256, why="the serving process samples 256 at most",
                           description="completions sampled per prompt (a group)")
    maxCompletionLength = count(load_default=64, minimum=1, maximum=65536, why="the longest completion served",
                                description="longest completion, in tokens")
    temperature = JsonNumber(load_default=1.0, validate=validate.Range(min=0, max=2),
                               metadata={"description": "sampling temperature of the rollouts (0 to 2, what the "
                                                        "serving processes take)"})
    rewards = fields.List(fields.Nested(RewardSchema), load_default=list,
                          metadata={"description": "at least one: {function, weight, ...its parameters} or "
                                                   "{judge, weight}"})


class RestoreSchema(Schema):
    class Meta:
        unknown = RAISE

    snapshot = fields.String(required=True, metadata={"description": "snapshot id to branch from"})
    what = fields.String(required=True, validate=validate.OneOf(RESTORE_KINDS),
                         metadata={"description": "weights: the snapshot's adapter, with a fresh optimizer; "
                                                  "trainingState: continue exactly, on the snapshot's GPU count"})


class SnapshotPolicySchema(Schema):
    class Meta:
        unknown = RAISE

    everySteps = count(load_default=None, allow_none=True, minimum=1, maximum=MAX_STEPS,
                       why="as many as maxSteps may be", description="write a snapshot every N steps (always one at the end)")


class ValidationPolicySchema(Schema):
    class Meta:
        unknown = RAISE

    everySteps = count(load_default=None, allow_none=True, minimum=1, maximum=MAX_STEPS,
                       why="as many as maxSteps may be", description="score validationDataset every N steps (always at the end); default: the "
                                   "snapshot interval, else only at the end")


class PlanSchema(Schema):
    class Meta:
        unknown = RAISE

    method = fields.String(load_default="sft", validate=validate.OneOf(METHODS),
                           metadata={"description": "sft or grpo"})
    model = fields.String(required=True, metadata={"description": "base-model id from the catalog"})
    dataset = fields.String(required=True, metadata={
        "description": "dataset: its id, or the name of one of your live datasets"})
    validationDataset = fields.String(load_default=None, allow_none=True,
                                      metadata={"description": "dataset (id or name) scored for validation loss "
                                                               "as the run trains"})
    validation = fields.Nested(ValidationPolicySchema, load_default=lambda: ValidationPolicySchema().load({}))
    precision = fields.String(load_default="fp32", validate=validate.OneOf(PRECISIONS),
                              metadata={"description": "the precision the model trains in (each base model lists "
                                                       "the ones it takes)"})
    execution = fields.Nested(ExecutionSchema, load_default=lambda: ExecutionSchema().load({}))
    adapter = fields.Nested(AdapterSchema, load_default=lambda: AdapterSchema().load({}))
    hyperparameters = fields.Nested(HyperparametersSchema, load_default=lambda: HyperparametersSchema().load({}))
    grpo = fields.Nested(GrpoSchema, load_default=None, allow_none=True)
    restore = fields.Nested(RestoreSchema, load_default=None, allow_none=True)
    snapshots = fields.Nested(SnapshotPolicySchema, load_default=lambda: SnapshotPolicySchema().load({}))
    workload = fields.String(load_default=None, allow_none=True, validate=FullMatch(WORKLOAD_PATTERN),
                             metadata={"description": "quota group; default runs"})
    name = labels.name_field("the run's name, for people: lists show it and ?name= finds it (not unique)")
    tags = labels.tags_field()


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
        raise ValidationFailed(reasons.PLAN_NOT_AN_OBJECT, details={"fields": {}})
    try:
        plan = PlanSchema().load(body)
    except ValidationError as exc:
        fields_ = {path: [_with_suggestion(path, problem) for problem in problems]
                   for path, problems in _flatten(exc.messages).items()}
        first, problems = next(iter(fields_.items()))
        raise ValidationFailed(reasons.plan_field_refused(first, problems[0]), details={"fields": fields_}) from None
    hp = plan["hyperparameters"]
    if hp["maxSteps"] is None and hp["epochs"] is None:
        hp["epochs"] = EPOCHS_WITHOUT_MAX_STEPS
    if plan["method"] == "grpo" and plan["grpo"] is None:
        plan["grpo"] = GrpoSchema().load({})
    return plan


# What marshmallow says of a key no field of the schema has (Meta.unknown = RAISE).
UNKNOWN_FIELD = fields.Field.default_error_messages.get("unknown", "Unknown field.")


def _with_suggestion(path: str, problem: str) -> str:
    """marshmallow's "Unknown field." with the plan field the key was likely meant to be (issue 30):
    `max_steps` -> maxSteps, `hyperparameters.maxstep` -> maxSteps, a top-level `maxSteps` ->
    hyperparameters.maxSteps."""
    if problem != UNKNOWN_FIELD:
        return problem
    suggestion = near_field(path)
    return reasons.unknown_field_did_you_mean(suggestion) if suggestion else problem


def _paths(schema: Schema, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every field path of a schema, nested ones included."""
    found = []
    for name, field_ in schema.fields.items():
        found.append((*prefix, name))
        inner = field_.inner if isinstance(field_, fields.List) else field_
        if isinstance(inner, fields.Nested):
            found.extend(_paths(inner.schema, (*prefix, name)))
    return found


def near_field(path: str) -> str | None:
    """The plan field an unknown key at `path` was likely meant to be, written as a path from where
    the key sits when it is a sibling there, else from the plan's top; None when nothing is near."""
    import difflib

    *parents, key = [part for part in path.split(".") if not part.isdigit()]
    wanted = re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), key.strip("_"))  # snake_case -> camelCase
    every = _paths(_schema())
    siblings = {p[-1]: p for p in every if list(p[:-1]) == parents}
    folded = {name.lower(): name for name in siblings}
    if wanted.lower() in folded:
        return folded[wanted.lower()]
    close = difflib.get_close_matches(wanted.lower(), list(folded), n=1, cutoff=0.75)
    if close:
        return folded[close[0]]
    elsewhere = [p for p in every if p[-1].lower() == wanted.lower()]
    return ".".join(elsewhere[0]) if len(elsewhere) == 1 else None


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


__all__ = ["PlanSchema", "parse_plan", "plan_default", "FullMatch", "METHODS",
           "batch_remainder",
           "PRECISIONS", "RESTORE_KINDS", "EXCLUDE", "EPOCHS_WITHOUT_MAX_STEPS"]
