from training_cli.commands.runs import branch_plan


def test_overrides_merge_key_by_key_and_the_parents_restore_is_dropped():
    parent = {"model": "m", "dataset": "ds-1", "restore": {"snapshot": "snap-0", "what": "weights"},
              "hyperparameters": {"maxSteps": 60, "learningRate": 0.003, "seed": 7}, "execution": {"gpus": 1}}
    merged = branch_plan(parent, {"hyperparameters": {"maxSteps": 10}, "execution": {"gpus": 2}})
    assert merged == {"model": "m", "dataset": "ds-1",
                      "hyperparameters": {"maxSteps": 10, "learningRate": 0.003, "seed": 7}, "execution": {"gpus": 2}}
    assert parent["hyperparameters"]["maxSteps"] == 60  # the parent's plan is not changed
