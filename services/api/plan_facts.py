"""What the API looks up for `shared.plans.check.check` (SPEC 2.3): the datasets, pool, reward
functions, judges, model and snapshot a plan names, as the calling token may see them.

Each lookup happens once, when a rule first asks, and raises the API's own refusal for what the
caller cannot use (404 naming the field); the run then stores what was looked up (the datasets'
digests, the parent snapshot).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from services.api.auth import Principal
from services.api.branches import readable_of, snapshot_for
from services.api.context import Context
from services.api.datasets import visible_dataset
from shared.config.deployment import Pool
from shared.plans import TrainingPlan
from shared.rewards.judges import find_judge
from shared.snapshots.files import damage_of


class RunPlanFacts:
    """`shared.plans.check.PlanFacts` for a plan submitted by `who`."""

    def __init__(self, context: Context, plan: TrainingPlan, who: Principal):
        self.context, self.plan, self.who = context, plan, who
        self._found: dict[str, Any] = {}  # what was looked up once, for the run the API then stores

    def _once(self, what: str, look_up: Callable[[], Any]) -> Any:
        if what not in self._found:
            self._found[what] = look_up()
        return self._found[what]

    def dataset(self) -> dict[str, Any]:
        return self._once("dataset", lambda: visible_dataset(self.context, self.plan.dataset, self.who))

    def validation_dataset(self) -> dict[str, Any] | None:
        if not self.plan.validation_dataset:
            return None
        return self._once("validation", lambda: visible_dataset(self.context, self.plan.validation_dataset, self.who,
                                                                field="validationDataset"))

    def pool(self, name: str) -> Pool | None:
        return self.context.config.pool(name)

    def pool_names(self) -> list[str]:
        return list(self.context.config.pools)

    def reward_functions(self) -> Mapping[str, str]:
        return self.context.config.reward_functions

    def judge(self, name: str) -> dict[str, Any] | None:
        return find_judge(self.context.store, name, workloads=self.who.name_scope)

    def model(self) -> dict[str, Any]:
        catalog = self.context.catalog
        return self._once("model", lambda: catalog.describe(catalog.check_loadable(self.plan.model)))

    def snapshot(self, snapshot_id: str) -> dict[str, Any]:
        return snapshot_for(self.context, snapshot_id, self.who)

    def readable(self, snapshot: Mapping[str, Any]) -> dict[str, bool]:
        return readable_of(dict(snapshot))

    def damage(self, snapshot: Mapping[str, Any], part: str) -> Any:
        return damage_of(self.context.artifacts, dict(snapshot), part, deep=True)
