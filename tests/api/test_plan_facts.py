"""What the API looks up for a plan's judge (services/api/plan_facts.py): each fact once per
submission, as the caller may see it, and nothing kept once the submission is answered."""

from __future__ import annotations

import gc
import weakref

import pytest

from services.api.auth import Principal
from services.api.plan_facts import RunPlanFacts
from shared.errors import NotFound
from tests.shared.plans.plan_fixtures import typed

ADMIN = Principal("admin", (), True)


def test_each_fact_is_looked_up_once_and_kept_by_the_submission_alone(app, dataset):
    context = app.extensions["trainer"]
    facts = RunPlanFacts(context, typed({"dataset": dataset}), ADMIN)
    first = facts.dataset()
    context.store.update(dataset, lambda doc: {**doc, "rows": 999})
    assert facts.dataset() is first and first["rows"] != 999  # the run stores what the rules judged
    assert facts.model()["id"] == "builtin/tiny-qwen3" and facts.validation_dataset() is None
    gone = weakref.ref(facts)
    del facts
    gc.collect()
    assert gone() is None  # no lookup cache outlives the request


def test_a_dataset_the_caller_may_not_use_is_unknown(app, dataset):
    facts = RunPlanFacts(app.extensions["trainer"], typed({"dataset": dataset}), Principal("team", ("team-a",), False))
    with pytest.raises(NotFound) as refused:
        facts.dataset()
    assert refused.value.message == f"dataset {dataset} does not exist"
