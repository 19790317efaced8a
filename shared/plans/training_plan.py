"""The run plan as a frozen, typed value: `TrainingPlan` and its parts.

Everything past the API's door reads a plan through this: the engines, the resolver, the memory
estimates, the endpoint manager. A field is an attribute (`plan.hyperparameters.batch_size`), so a
misspelt one fails where it is written instead of as a KeyError in a worker hours after the run was
accepted (tests/test_architecture.py finds any read by string outside this package).

Stored plans stay JSON documents (the run's `plan`, camelCase, docs/api.md). `TrainingPlan.from_dict`
reads one and `to_dict` writes it back key for key: every attribute is its key in snake_case
(`batchSize` is `batch_size`). A plan stored before a field existed reads that field's default from
the schema (schema.py `plan_default`), the one a plan submitted now gets; a field of a stored plan
that the schema does not know is refused, never dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Mapping

from shared import reasons
from shared.engines import RESTORE_NONE
from shared.plans.schema import batch_remainder, parse_plan, plan_default

GRPO = "grpo"


def wire_key(attribute: str) -> str:
    """The document's key of an attribute: `batch_size` -> `batchSize`."""
    head, *rest = attribute.split("_")
    return head + "".join(word.capitalize() for word in rest)


def attribute_of(key: str) -> str:
    """The attribute of a document's key: `batchSize` -> `batch_size`."""
    return re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), key)


class UnknownPlanField(ValueError):
    """A stored plan holds a key no field of the schema has (a plan is never read by half)."""


class _Part:
    """A part of the plan (a nested object of the document): read and written by its fields' names.

    PATH is where the part sits in the plan, for its fields' defaults; NESTED says which fields hold
    parts (or tuples of them) rather than JSON values."""

    PATH: ClassVar[tuple[str, ...]] = ()
    NESTED: ClassVar[Mapping[str, Any]] = {}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Any:
        data = dict(data or {})
        names = {wire_key(f.name): f.name for f in fields(cls) if f.init}
        unknown = [key for key in data if key not in names]
        if unknown:
            raise UnknownPlanField(reasons.plan_field_unknown(".".join((*cls.PATH, unknown[0]))))
        values = {}
        for key, name in names.items():
            values[name] = cls._read(name, _value(data, cls.PATH, key))
        return cls(**values)

    @classmethod
    def _read(cls, name: str, value: Any) -> Any:
        part = cls.NESTED.get(name)
        if value is None or part is None:
            return tuple(value) if isinstance(value, list) else value
        if isinstance(part, tuple):  # a list of parts
            return tuple(part[0].from_dict(item) for item in value)
        return part.from_dict(value)

    def to_dict(self) -> dict[str, Any]:
        return {wire_key(f.name): _written(getattr(self, f.name)) for f in fields(self) if f.init}


def _value(data: Mapping[str, Any], path: tuple[str, ...], key: str) -> Any:
    """The stored value, or where there is none (a plan stored before the field existed, or a null
    where the field now has a default) the schema's default; a null stays null for a field without
    one (the startable-runs list's restore names no snapshot)."""
    value = data.get(key)
    if value is None:
        try:
            return plan_default(*path, key)
        except KeyError:
            if key not in data:
                raise
    return value


def _written(value: Any) -> Any:
    if isinstance(value, _Part):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_written(item) for item in value]
    return value


@dataclass(frozen=True)
class Execution(_Part):
    PATH: ClassVar[tuple[str, ...]] = ("execution",)

    gpus: int  # of one node
    pool: str | None  # None until the API fills in the deployment's default pool


@dataclass(frozen=True)
class Adapter(_Part):
    PATH: ClassVar[tuple[str, ...]] = ("adapter",)

    rank: int
    alpha: float
    dropout: float
    target_modules: str | tuple[str, ...]  # "all-linear", or module names

    @property
    def every_linear_layer(self) -> bool:
        return self.target_modules == "all-linear"


@dataclass(frozen=True)
class Hyperparameters(_Part):
    PATH: ClassVar[tuple[str, ...]] = ("hyperparameters",)

    learning_rate: float
    epochs: float | None  # None when max_steps is set
    max_steps: int | None
    batch_size: int  # the global batch, the same whatever the GPU count
    gradient_accumulation: int
    warmup_steps: int
    seed: int
    max_seq_length: int
    packing: bool
    train_on_prompt: bool

    def split_remainder(self, devices: int = 1) -> int:
        """What is left of the global batch once split over `devices` x gradientAccumulation
        micro-batches: 0 when it splits evenly (the one batch-split rule, SPEC 3.2)."""
        return batch_remainder(self.batch_size, devices=devices, accumulation=self.gradient_accumulation)

    def micro_batch(self, devices: int) -> int:
        """Rows each device takes per micro-batch. The API refuses a batch that does not split
        evenly (`split_remainder`); rounding down here only guards runs stored before that rule."""
        return max(1, self.batch_size // (devices * self.gradient_accumulation))


@dataclass(frozen=True)
class Reward(_Part):
    """`{function: NAME, weight, ...parameters}` or `{judge: ENDPOINT, weight}`: every key besides
    these three is a parameter of the function, kept as given (None included), in its order."""

    PATH: ClassVar[tuple[str, ...]] = ("grpo", "rewards")
    ENTRY: ClassVar[tuple[str, ...]] = ("function", "judge", "weight")

    function: str | None
    judge: str | None
    weight: float
    parameters: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reward:
        data = dict(data or {})
        entry = {key: _value(data, cls.PATH, key) for key in cls.ENTRY}
        return cls(**entry, parameters=tuple((k, v) for k, v in data.items() if k not in cls.ENTRY))

    def to_dict(self) -> dict[str, Any]:
        """The entry as the plan stores it, and as shared/rewards.py scores it."""
        return {"function": self.function, "judge": self.judge, "weight": self.weight, **dict(self.parameters)}


@dataclass(frozen=True)
class Grpo(_Part):
    PATH: ClassVar[tuple[str, ...]] = ("grpo",)
    NESTED: ClassVar[Mapping[str, Any]] = {"rewards": (Reward,)}

    kl_penalty: float
    num_generations: int
    max_completion_length: int
    temperature: float
    rewards: tuple[Reward, ...]

    @property
    def reward_entries(self) -> list[dict[str, Any]]:
        """The rewards as shared/rewards.py reads them (entries shared with evaluations)."""
        return [reward.to_dict() for reward in self.rewards]


@dataclass(frozen=True)
class Restore(_Part):
    PATH: ClassVar[tuple[str, ...]] = ("restore",)

    snapshot: str | None  # None only in the plans the startable-runs list stands for
    what: str  # weights | trainingState


@dataclass(frozen=True)
class SnapshotPolicy(_Part):
    PATH: ClassVar[tuple[str, ...]] = ("snapshots",)

    every_steps: int | None  # None: only at the end


@dataclass(frozen=True)
class ValidationPolicy(_Part):
    PATH: ClassVar[tuple[str, ...]] = ("validation",)

    every_steps: int | None  # None: the snapshot interval, else only at the end


@dataclass(frozen=True)
class TrainingPlan(_Part):
    """A run's plan, every default filled in. A run's `name` is the run's, not the plan's: the API
    takes it from the request (schema.py `parse_plan` still returns it)."""

    NESTED: ClassVar[Mapping[str, Any]] = {
        "validation": ValidationPolicy, "execution": Execution, "adapter": Adapter,
        "hyperparameters": Hyperparameters, "grpo": Grpo, "restore": Restore, "snapshots": SnapshotPolicy,
    }

    method: str  # sft | grpo
    model: str  # base-model id
    dataset: str  # dataset id
    validation_dataset: str | None
    validation: ValidationPolicy
    precision: str  # fp32 | bf16 | fp16
    execution: Execution
    adapter: Adapter
    hyperparameters: Hyperparameters
    grpo: Grpo | None  # set on every grpo plan, None on sft plans
    restore: Restore | None  # the snapshot a branch starts from
    snapshots: SnapshotPolicy
    workload: str | None  # None until the API fills in the caller's default workload

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainingPlan:
        """The plan of a stored document (or of `parse_plan`, less its `name`). A plan always names
        its model and dataset: one without either raises KeyError naming the field."""
        for required in ("model", "dataset"):
            if required not in (data or {}):
                raise KeyError(reasons.plan_field_missing(required))
        return super().from_dict(data)

    @property
    def grpo_settings(self) -> Grpo:
        """The grpo part of a grpo plan (the schema fills it in for every one); defaults elsewhere."""
        return self.grpo if self.grpo is not None else Grpo.from_dict({"rewards": []})

    @property
    def is_grpo(self) -> bool:
        return self.method == GRPO

    @property
    def kl(self) -> bool:
        """Whether the run keeps a reference policy: a grpo plan with a KL penalty above 0."""
        return self.is_grpo and self.grpo is not None and self.grpo.kl_penalty > 0

    @property
    def restore_kind(self) -> str:
        """What the run restores: none, weights or trainingState (shared/engines.py ALL_RESTORES)."""
        return self.restore.what if self.restore is not None else RESTORE_NONE

    @property
    def judges(self) -> list[str]:
        """The judge endpoints (ids or names) the plan's rewards name, in order."""
        return [r.judge for r in (self.grpo.rewards if self.grpo else ()) if r.judge]


@dataclass(frozen=True)
class PlanShown:
    """What a client shows of a run's plan as an API answer holds it (training_cli/tables.py). Read
    leniently, unlike a stored plan: a CLI may talk to a server of another release, so a field it
    does not know is passed over and one that is missing shows as nothing."""

    method: str | None
    model: str | None
    dataset: str | None

    @classmethod
    def of(cls, document: Any) -> PlanShown:
        document = document if isinstance(document, Mapping) else {}
        return cls(**{name: document.get(name) for name in ("method", "model", "dataset")})


def read_plan(body: Any) -> tuple[TrainingPlan, str | None, list[str]]:
    """A request body as (the plan, the run's name, its tags): `parse_plan`'s refusals, else every
    default filled in. The name and tags are the run's own, not part of the plan it stores."""
    parsed = parse_plan(body)
    name, tags = parsed.pop("name"), parsed.pop("tags")
    return TrainingPlan.from_dict(parsed), name, tags
