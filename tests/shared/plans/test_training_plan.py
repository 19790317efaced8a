"""`TrainingPlan` (shared/plans/training_plan.py): every stored plan reads into it and writes back key
for key, old ones included (a field they lack reads the schema's default), and the typed plan and
the schema declare the same fields."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest
from marshmallow import fields as mm_fields

from shared import reasons
from shared.plans import PlanSchema, TrainingPlan, UnknownPlanField, parse_plan, plan_default
from shared.plans.training_plan import Grpo, Hyperparameters, Reward, attribute_of, wire_key
from tests.shared.plan_fixtures import STORED_PLANS
from tests.trainer_worker.doubles import PLAN
from tests.trainer_worker.grpo_doubles import GRPO_PLAN

# request bodies between them giving every field of the schema a value of its own
REQUESTS = [
    {"model": "builtin/tiny-qwen3", "dataset": "ds-1"},
    {"method": "sft", "model": "builtin/tiny-qwen3", "dataset": "ds-1", "validationDataset": "ds-2",
     "validation": {"everySteps": 3}, "precision": "bf16", "execution": {"gpus": 2, "pool": "gpu"},
     "adapter": {"rank": 16, "alpha": 32, "dropout": 0.05, "targetModules": ["q_proj", "v_proj"]},
     "hyperparameters": {"learningRate": 0.0001, "maxSteps": 40, "epochs": 2, "batchSize": 16,
                         "gradientAccumulation": 2, "warmupSteps": 4, "seed": 7, "maxSeqLength": 128,
                         "packing": True, "trainOnPrompt": True},
     "restore": {"snapshot": "snap-1", "what": "trainingState"}, "snapshots": {"everySteps": 10},
     "workload": "team-a", "name": "named"},
    {"method": "grpo", "model": "builtin/tiny-qwen3", "dataset": "ds-1",
     "grpo": {"klPenalty": 0.1, "numGenerations": 8, "maxCompletionLength": 32, "temperature": 0.7,
              "rewards": [{"function": "regex", "pattern": "^a+$", "weight": 2},
                          {"function": "my_reward", "threshold": 0.5, "field": None, "options": {"k": [1, 2]}},
                          {"judge": "ep-judge"}]}},
]


def stored(request):
    plan = parse_plan(copy.deepcopy(request))
    plan.pop("name"), plan.pop("tags")  # the API keeps a run's name and tags on the run, not in its plan
    return plan


@pytest.mark.parametrize("request_body", REQUESTS)
def test_a_plan_submitted_now_round_trips_key_for_key(request_body):
    plan = stored(request_body)
    typed = TrainingPlan.from_dict(plan)
    assert typed.to_dict() == plan
    assert json.dumps(typed.to_dict()) == json.dumps(plan)  # the same keys in the same order
    assert TrainingPlan.from_dict(typed.to_dict()) == typed


@pytest.mark.parametrize("era", list(STORED_PLANS))
@pytest.mark.parametrize("method", ["sft", "grpo"])
def test_an_old_plan_reads_the_defaults_of_the_fields_it_lacks(era, method):
    old = STORED_PLANS[era][0 if method == "sft" else 1]
    typed = TrainingPlan.from_dict(copy.deepcopy(old))
    assert typed.validation.every_steps is None and plan_default("validation") == {"everySteps": None}
    assert typed.hyperparameters.packing is plan_default("hyperparameters", "packing") is False
    assert typed.hyperparameters.train_on_prompt is plan_default("hyperparameters", "trainOnPrompt") is False
    written = typed.to_dict()
    # what it holds is written back as it was; what it lacked, as the default
    assert {k: v for k, v in written.items() if k in old and k != "hyperparameters"} == \
        {k: v for k, v in old.items() if k != "hyperparameters"}
    assert set(written) - set(old) == ({"validation"} if era == "FIRST" else set())
    assert {k: v for k, v in written["hyperparameters"].items() if k in old["hyperparameters"]} == \
        old["hyperparameters"]
    assert {k: v for k, v in written["hyperparameters"].items() if k not in old["hyperparameters"]} == \
        {k: plan_default("hyperparameters", k) for k in ("packing", "trainOnPrompt") if k not in old["hyperparameters"]}
    assert TrainingPlan.from_dict(written) == typed
    if method == "grpo":
        first, judge = typed.grpo.rewards
        assert (first.function, first.weight, dict(first.parameters)["target"]) == ("length", 1.0, 20)
        assert typed.judges == ["ep-1"] and judge.judge == "ep-1" and judge.weight == 0.5
        assert written["grpo"]["rewards"] == old["grpo"]["rewards"]  # null parameters kept, as stored


@pytest.mark.parametrize("fixture", [PLAN, GRPO_PLAN], ids=["sft", "grpo"])
def test_the_engine_tests_plans_read_with_the_defaults_they_leave_out(fixture):
    plan = {**copy.deepcopy(fixture), "dataset": "ds-1"}
    typed = TrainingPlan.from_dict(plan)
    assert typed.hyperparameters.batch_size == plan["hyperparameters"]["batchSize"]
    assert typed.execution.pool is None and typed.workload is None and typed.restore is None
    assert TrainingPlan.from_dict(typed.to_dict()) == typed


def _schema_paths(schema, prefix=()):
    for name, field in schema.fields.items():
        inner = field.inner if isinstance(field, mm_fields.List) else field
        if isinstance(inner, mm_fields.Nested):
            yield from _schema_paths(inner.schema, (*prefix, name))
        else:
            yield (*prefix, name)


def _typed_paths(cls, prefix=()):
    for field in dataclasses.fields(cls):
        nested = cls.NESTED.get(field.name)
        nested = nested[0] if isinstance(nested, tuple) else nested
        if nested is not None:
            yield from _typed_paths(nested, (*prefix, wire_key(field.name)))
        elif field.name != "parameters":
            yield (*prefix, wire_key(field.name))


def test_the_typed_plan_has_a_field_for_every_field_of_the_schema_and_no_other():
    schema = set(_schema_paths(PlanSchema()))
    # a run's name and tags are the run's; a reward's other keys (field, pattern, target: the built-in
    # functions' parameters, declared for their help text) are its parameters
    schema -= {("name",), ("tags",), *(("grpo", "rewards", p) for p in ("field", "pattern", "target"))}
    assert set(_typed_paths(TrainingPlan)) == schema


def test_keys_and_attributes_name_each_other():
    for key in ("batchSize", "targetModules", "validationDataset", "everySteps", "klPenalty", "method"):
        assert wire_key(attribute_of(key)) == key
    assert attribute_of("maxCompletionLength") == "max_completion_length"


def test_a_plan_is_frozen():
    typed = TrainingPlan.from_dict(stored(REQUESTS[2]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        typed.method = "sft"
    with pytest.raises(dataclasses.FrozenInstanceError):
        typed.hyperparameters.batch_size = 3
    assert isinstance(typed.adapter.target_modules, str) and typed.grpo.rewards[0].parameters == (("pattern", "^a+$"),)
    assert dataclasses.replace(typed, method="sft").method == "sft" and typed.method == "grpo"


def test_what_the_typed_plan_derives():
    grpo = TrainingPlan.from_dict(stored(REQUESTS[2]))
    sft = TrainingPlan.from_dict(stored(REQUESTS[1]))
    assert grpo.is_grpo and grpo.kl and grpo.restore_kind == "none" and grpo.judges == ["ep-judge"]
    assert not sft.is_grpo and not sft.kl and sft.restore_kind == "trainingState" and sft.judges == []
    assert sft.adapter.target_modules == ("q_proj", "v_proj") and not sft.adapter.every_linear_layer
    assert grpo.grpo.reward_entries == stored(REQUESTS[2])["grpo"]["rewards"]
    assert sft.grpo_settings == Grpo.from_dict({"rewards": []}) and grpo.grpo_settings is grpo.grpo


@pytest.mark.parametrize("batch, devices, accumulation, remainder, micro", [
    (16, 2, 2, 0, 4), (16, 1, 1, 0, 16), (6, 4, 1, 2, 1), (4, 2, 4, 4, 1), (9, 2, 2, 1, 2),
])
def test_the_one_batch_split(batch, devices, accumulation, remainder, micro):
    hyper = Hyperparameters.from_dict({"batchSize": batch, "gradientAccumulation": accumulation})
    assert hyper.split_remainder(devices) == remainder
    assert hyper.micro_batch(devices) == micro


def test_a_stored_plan_with_a_field_the_plan_does_not_have_is_refused_naming_it():
    plan = stored(REQUESTS[0])
    plan["hyperparameters"]["learningRat"] = 0.1
    with pytest.raises(UnknownPlanField) as refused:
        TrainingPlan.from_dict(plan)
    assert str(refused.value) == reasons.plan_field_unknown("hyperparameters.learningRat")
    assert str(refused.value) == "plan field hyperparameters.learningRat is not a field of a run plan"
    with pytest.raises(UnknownPlanField):
        TrainingPlan.from_dict({**stored(REQUESTS[0]), "name": "x"})


def test_a_stored_plan_without_its_model_or_dataset_is_refused_naming_it():
    plan = stored(REQUESTS[0])
    del plan["dataset"]
    with pytest.raises(KeyError) as refused:
        TrainingPlan.from_dict(plan)
    assert refused.value.args[0] == reasons.plan_field_missing("dataset")
    assert refused.value.args[0] == "plan field dataset is missing, and it has no default"


def test_a_reward_keeps_its_parameters_in_order_with_their_nulls():
    entry = {"function": "f", "judge": None, "weight": 1.0, "b": None, "a": [1, {"x": 2}]}
    reward = Reward.from_dict(entry)
    assert reward.parameters == (("b", None), ("a", [1, {"x": 2}]))
    assert json.dumps(reward.to_dict()) == json.dumps(entry)
    assert Reward.from_dict({"judge": "j"}).to_dict() == {"function": None, "judge": "j", "weight": 1.0}


def test_sentences_word_for_word():
    assert reasons.plan_field_refused("adapter.rank", "too big") == "plan field adapter.rank: too big"
    assert reasons.PLAN_NOT_AN_OBJECT == "the plan must be a JSON object"
    assert reasons.TARGET_MODULES_SHAPE == 'must be "all-linear" or a non-empty list of module names'
    assert reasons.BATCH_NOT_A_MULTIPLE_OF_ACCUMULATION == "must be a multiple of gradientAccumulation"
