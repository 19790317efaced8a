"""The flags of `runs create` and `runs branch` are the plan schema's fields (shared/plans/flags.py):
their help is the field's description, their choices and bounds the field's validators, so a flag
says and takes what the API takes, and a value the schema refuses is refused before anything is sent."""

from __future__ import annotations

import click
import pytest

from shared.plans.flags import flag_spec
from training_cli import short_ids as ids
from training_cli.commands.runs import BRANCH_FLAGS, PLAN_FLAGS, group


def options(command: str) -> dict[str, click.Option]:
    return {param.name: param for param in group.commands[command].params if isinstance(param, click.Option)}


@pytest.mark.parametrize("command, flags", [("create", tuple(PLAN_FLAGS)), ("branch", BRANCH_FLAGS)])
def test_each_plan_flag_is_its_schema_fields_declaration(command, flags):
    declared = options(command)
    for flag in flags:
        option, spec = declared[flag], flag_spec(*PLAN_FLAGS[flag])
        assert option.opts == [f"--{flag.replace('_', '-')}"]
        assert option.help == spec.help and spec.help, flag
        if spec.choices:
            assert tuple(option.type.choices) == spec.choices, flag
        elif spec.kind in (int, float):
            kind = click.IntRange if spec.kind is int else click.FloatRange
            assert isinstance(option.type, kind), flag
            assert (option.type.min, option.type.max, option.type.min_open, option.type.max_open) == (
                spec.minimum, spec.maximum, spec.min_open, spec.max_open), flag
        elif PLAN_FLAGS[flag][-1] in ("dataset", "validationDataset"):
            assert option.type is ids.DATASET, flag  # a string; a short id is looked up (training_cli/short_ids.py)
        else:
            assert option.type is click.STRING, flag


def test_what_the_schema_declares_reaches_the_flags():
    create = options("create")
    assert tuple(create["method"].type.choices) == ("sft", "grpo")
    assert tuple(create["precision"].type.choices) == ("fp32", "bf16", "fp16")
    assert (create["gpus"].type.min, create["gpus"].type.max) == (1, 64)
    assert create["learning_rate"].type.min_open and create["learning_rate"].type.max == 1
    assert create["batch_size"].help == ("global batch size, the same whatever the GPU count "
                                         "(1 to 65536: rows a step can hold)")
    restore = options("branch")["what"]
    assert restore.opts == ["--restore"] and restore.required
    assert tuple(restore.type.choices) == ("weights", "trainingState") and restore.help == flag_spec(
        "restore", "what").help


@pytest.mark.parametrize("args, said", [
    (("--gpus", "65"), "65 is not in the range 1<=x<=64"),
    (("--precision", "fp8"), "'fp8' is not one of 'fp32', 'bf16', 'fp16'"),
    (("--learning-rate", "0"), "0.0 is not in the range 0<x<=1"),
])
def test_a_value_the_schema_refuses_is_refused_before_anything_is_sent(training, api, args, said):
    result = training("runs", "create", "--model", "builtin/tiny-qwen3", "--dataset", "ds-1", *args)
    assert result.exit_code == 2 and said in result.output
    assert api.state["runs"] == {}


def test_a_flag_for_a_path_the_schema_does_not_have_is_refused_by_name():
    with pytest.raises(KeyError, match="hyperparameters.learningRat"):
        flag_spec("hyperparameters", "learningRat")
    with pytest.raises(KeyError, match="hyperparameters"):
        flag_spec("hyperparameters")  # a part, not a field
