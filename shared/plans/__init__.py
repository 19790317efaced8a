"""The run plan (SPEC 2.3): its one home.

- `schema.py`: the shape of a plan as a request gives it (marshmallow, one schema per part), every
  field's default and help text in one declaration, which the OpenAPI document and the CLI's flags
  read too; `parse_plan` validates a request body.
- `training_plan.py`: `TrainingPlan`, the frozen, typed plan everything past the API reads
  (attributes, never strings), with `from_dict` / `to_dict` for the stored documents.
- `check.py`: `check(plan, facts)`, the one judge of every rule that spans fields or needs the
  deployment (imported from there: it reaches the resolver, which reads this package).

`from shared.plans import parse_plan` and the other names below keep working for every importer.
"""

from shared.plans.schema import (
    EPOCHS_WITHOUT_MAX_STEPS,
    EXCLUDE,
    MAX_GPUS,
    METHODS,
    PRECISIONS,
    RESTORE_KINDS,
    WORKLOAD_PATTERN,
    AdapterSchema,
    FullMatch,
    HyperparametersSchema,
    PlanSchema,
    RewardSchema,
    _flatten,
    batch_remainder,
    count,
    parse_plan,
    plan_default,
)
from shared.plans.training_plan import (
    Adapter,
    Execution,
    Grpo,
    Hyperparameters,
    PlanShown,
    Restore,
    Reward,
    SnapshotPolicy,
    TrainingPlan,
    UnknownPlanField,
    ValidationPolicy,
    read_plan,
)

__all__ = [
    "EPOCHS_WITHOUT_MAX_STEPS", "EXCLUDE", "MAX_GPUS", "METHODS", "PRECISIONS", "RESTORE_KINDS", "WORKLOAD_PATTERN",
    "AdapterSchema", "FullMatch", "HyperparametersSchema", "PlanSchema", "RewardSchema", "_flatten",
    "batch_remainder", "count", "parse_plan", "plan_default",
    "Adapter", "Execution", "Grpo", "Hyperparameters", "PlanShown", "Restore", "Reward", "SnapshotPolicy", "TrainingPlan",
    "UnknownPlanField", "ValidationPolicy", "read_plan",
]
