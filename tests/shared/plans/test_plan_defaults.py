"""`plan_default` is what `parse_plan` fills in: readers of plans stored before a field existed fall
back to the defaults a plan submitted now gets (shared/plans/schema.py)."""

from __future__ import annotations

import pytest

from shared.plans import PlanSchema, parse_plan, plan_default


def test_every_default_is_the_one_parse_plan_fills_in():
    request = {"method": "grpo", "model": "m", "dataset": "ds-x", "grpo": {"rewards": [{"judge": "j"}]}}
    stored = parse_plan(request)
    checked = []
    for part, field in PlanSchema().fields.items():
        schema = getattr(field, "schema", None)
        if schema is None or stored[part] is None:  # a plain field, or a part left out (restore)
            if part not in request:
                assert plan_default(part) == stored[part], part
                checked.append(part)
            continue
        for name in schema.fields:
            if (part, name) == ("hyperparameters", "epochs"):
                continue  # None; parse_plan gives EPOCHS_WITHOUT_MAX_STEPS when maxSteps is unset too
            if name not in request.get(part, {}):
                assert plan_default(part, name) == stored[part][name], f"{part}.{name}"
                checked.append(f"{part}.{name}")
    assert {"precision", "hyperparameters.learningRate", "hyperparameters.maxSeqLength", "adapter.alpha",
            "grpo.numGenerations", "snapshots.everySteps", "execution.gpus"} <= set(checked)
    assert plan_default("grpo", "rewards", "weight") == stored["grpo"]["rewards"][0]["weight"]


@pytest.mark.parametrize("path", [("model",), ("restore", "what"), ("nothing",), ("precision", "bits")])
def test_a_field_without_a_default_is_named(path):
    with pytest.raises(KeyError, match=".".join(path[:1])):
        plan_default(*path)
