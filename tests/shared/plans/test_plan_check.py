"""`check(plan, facts)` (shared/plans/check.py), the one judge of a plan, as plain Python: the facts
are the lookups' answers held in a dict (the API's own lookups, services/api/plan_facts.py, run
against Redis in tests/api). Each rule refuses with its sentence; a plan breaking two rules meets the
one users have always met first; a fact is asked only once a rule needs it, the snapshot's files last."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from shared import reasons
from shared.config import Node, Pool
from shared.errors import NotFound, TrainerError, Unprocessable, ValidationFailed
from shared.plans import TrainingPlan, parse_plan
from shared.plans.check import check
from shared.snapshot_files import Damage

TINY = {"id": "builtin/tiny-qwen3", "parameters": 100_000, "precisions": ["fp32", "bf16"], "gpuCounts": [1, 2],
        "modality": "text", "loraTargetModules": ["q_proj", "k_proj", "v_proj"]}
POOL = Pool("default", (Node("local", "cpu", 2),), quotas={"small": 1})
DATASET = {"id": "ds-1", "format": "chat", "rows": 10, "digest": "d1"}
SNAPSHOT = {"id": "snap-1", "model": TINY["id"], "method": "sft", "precision": "fp32", "gpus": 1, "engine": "sft-single",
            "contents": {"weights": True, "trainingState": True}}


class Facts:
    """The answers of the lookups, and the order they were asked in."""

    def __init__(self, **overrides):
        self.answers = {"dataset": DATASET, "validation": {**DATASET, "id": "ds-2"}, "pools": {"default": POOL},
                        "judges": {}, "model": TINY, "snapshots": {"snap-1": SNAPSHOT},
                        "readable": {"weights": True, "trainingState": True}, "damage": {}, **overrides}
        self.asked = []

    def _ask(self, what, answer):
        self.asked.append(what)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def dataset(self):
        return self._ask("dataset", self.answers["dataset"])

    def validation_dataset(self):
        return self._ask("validation", self.answers["validation"])

    def pool(self, name):
        return self._ask("pool", self.answers["pools"].get(name))

    def pool_names(self):
        return list(self.answers["pools"])

    def reward_functions(self):
        return self._ask("rewards", {})

    def judge(self, name):
        return self._ask("judge", self.answers["judges"].get(name))

    def model(self):
        return self._ask("model", self.answers["model"])

    def snapshot(self, snapshot_id):
        found = self.answers["snapshots"].get(snapshot_id) or NotFound(reasons.snapshot_unknown(snapshot_id))
        return self._ask("snapshot", found)

    def readable(self, snapshot):
        return self._ask("readable", self.answers["readable"])

    def damage(self, snapshot, part):
        return self._ask(f"damage {part}", self.answers["damage"].get(part))


def plan(**request):
    body = {"model": TINY["id"], "dataset": "ds-1", "execution": {"pool": "default"}, "workload": "runs",
            **copy.deepcopy(request)}
    parsed = parse_plan(body)
    parsed.pop("name"), parsed.pop("tags")
    return TrainingPlan.from_dict(parsed)


def refusal(plan_, facts=None):
    with pytest.raises(TrainerError) as refused:
        check(plan_, facts or Facts())
    return refused.value


def test_a_plan_that_breaks_no_rule_is_accepted_with_its_engine():
    facts = Facts()
    accepted = check(plan(), facts)
    assert accepted.engine.name == "sft-single" and accepted.parent is None and accepted.judge_workloads == {}
    assert facts.asked == ["dataset", "pool", "model"]


def test_the_validation_dataset_holds_rows_of_the_training_format():
    facts = Facts(validation={"id": "ds-2", "format": "completion", "rows": 3})
    refused = refusal(plan(validationDataset="ds-2"), facts)
    assert isinstance(refused, ValidationFailed) and refused.details == {"field": "validationDataset"}
    assert refused.message == reasons.validation_format_differs(validation="ds-2", validation_format="completion",
                                                                dataset="ds-1", dataset_format="chat")
    assert refused.message == ("validation dataset ds-2 holds completion rows and dataset ds-1 holds chat rows; "
                               "a run validates on rows of its training format")


def test_an_unknown_pool_is_named_with_the_pools_there_are():
    refused = refusal(replace(plan(), execution=replace(plan().execution, pool="gpu")))
    assert isinstance(refused, NotFound) and refused.status == 404  # as every request naming an unknown pool
    assert refused.message == reasons.pool_unknown("gpu") == "pool gpu does not exist in this deployment"
    assert refused.details == {"field": "execution.pool", "pool": "gpu", "pools": ["default"]}


def test_a_run_past_its_workloads_quota():
    refused = refusal(plan(workload="small", execution={"pool": "default", "gpus": 2}))
    assert isinstance(refused, Unprocessable)
    assert refused.message == reasons.gpus_exceed_quota(gpus=2, workload="small", pool="default", quota_gpus=1)


@pytest.mark.parametrize("request_, field, sentence", [
    ({"grpo": {"rewards": []}}, "grpo", reasons.grpo_on_sft_run("sft")),
    ({"method": "grpo", "validationDataset": "ds-2", "grpo": {"rewards": [{"function": "length", "target": 20}]}},
     "validationDataset", reasons.GRPO_NO_VALIDATION),
    ({"method": "grpo"}, "grpo.rewards", reasons.GRPO_NEEDS_REWARDS),
    ({"method": "grpo", "hyperparameters": {"batchSize": 6}, "grpo": {"rewards": [{"function": "length", "target": 20}]}},
     "hyperparameters.batchSize", reasons.grpo_batch_not_a_multiple(batch_size=6, generations=4)),
])
def test_grpo_settings(request_, field, sentence):
    refused = refusal(plan(**request_))
    assert isinstance(refused, ValidationFailed) and refused.message == sentence and refused.details["field"] == field


def test_judges_are_endpoints_the_caller_may_use_that_have_not_ended():
    grpo = plan(method="grpo", grpo={"rewards": [{"function": "length", "target": 20}, {"judge": "grader"}]})
    refused = refusal(grpo)
    assert isinstance(refused, NotFound) and refused.message == reasons.judge_unknown("grader")
    assert refused.details == {"field": "grpo.rewards.1.judge"}
    ended = Facts(judges={"grader": {"id": "ep-1", "phase": "TERMINATED", "workload": "team"}})
    refused = refusal(grpo, ended)
    assert isinstance(refused, Unprocessable) and refused.message == reasons.judge_ended("grader", "TERMINATED")
    ready = Facts(judges={"grader": {"id": "ep-1", "phase": "READY", "workload": "team"}})
    assert check(grpo, ready).judge_workloads == {"grader": "team"}


def test_target_modules_the_model_has():
    refused = refusal(plan(adapter={"targetModules": ["q_proj", "gate_proj"]}))
    assert refused.message == reasons.plan_field_refused("adapter.targetModules", reasons.target_modules_unknown(
        model=TINY["id"], unknown=["gate_proj"], modules=TINY["loraTargetModules"]))


def test_epochs_that_make_too_many_steps():
    refused = refusal(plan(hyperparameters={"epochs": 10_000, "batchSize": 1}),
                      Facts(dataset={**DATASET, "rows": 10_000}))
    assert refused.details["field"] == "hyperparameters.epochs" and refused.details["steps"] == 100_000_000


def test_a_batch_that_does_not_split_over_the_gpus():
    refused = refusal(plan(execution={"pool": "default", "gpus": 2}, hyperparameters={"batchSize": 6,
                                                                                         "gradientAccumulation": 2}))
    assert isinstance(refused, ValidationFailed) and refused.details == {"field": "hyperparameters.batchSize"}
    assert refused.message == reasons.batch_not_split(batch_size=6, gpus=2, accumulation=2)


def test_packing_takes_no_rows_with_images():
    vision = {**TINY, "id": "builtin/tiny-gemma3-vision", "modality": "image-text"}
    pictures = Facts(model=vision, dataset={**DATASET, "modality": "image-text"})
    refused = refusal(plan(model=vision["id"], hyperparameters={"packing": True}), pictures)
    assert isinstance(refused, ValidationFailed) and refused.details == {"field": "hyperparameters.packing"}
    assert refused.message == reasons.IMAGE_ROWS_NOT_PACKED
    assert check(plan(model=vision["id"]), pictures).engine.name == "sft-single"
    assert check(plan(hyperparameters={"packing": True}), Facts()).engine.name == "sft-single"  # text rows pack


@pytest.mark.parametrize("snapshot, readable, sentence", [
    (SNAPSHOT, {"weights": False, "trainingState": False}, reasons.WEIGHTS_UNREADABLE),
    ({**SNAPSHOT, "model": "other/model"}, None,
     reasons.branch_other_model(snapshot_id="snap-1", snapshot_model="other/model", plan_model=TINY["id"])),
    ({**SNAPSHOT, "contents": {"weights": True}}, None, reasons.snapshot_has_no_training_state("snap-1")),
    (SNAPSHOT, {"weights": True, "trainingState": False}, reasons.TRAINING_STATE_UNREADABLE),
    ({**SNAPSHOT, "gpus": 2}, None, reasons.training_state_gpu_mismatch(saved_gpus=2, run_gpus=1)),
    ({**SNAPSHOT, "precision": "bf16"}, None, reasons.branch_changes(what="precision", parent="bf16", plan="fp32")),
    ({**SNAPSHOT, "engine": "sft-ddp"}, None, reasons.branch_changes(what="engine", parent="sft-ddp",
                                                                      plan="sft-single")),
])
def test_the_restore_rules(snapshot, readable, sentence):
    facts = Facts(snapshots={"snap-1": snapshot}, **({"readable": readable} if readable else {}))
    refused = refusal(plan(restore={"snapshot": "snap-1", "what": "trainingState"}), facts)
    assert isinstance(refused, Unprocessable) and refused.message == sentence
    assert refused.details["field"] == "restore" and refused.details["snapshot"] == "snap-1"


def test_a_branch_reads_its_snapshots_files_last_and_is_accepted_with_its_parent():
    facts = Facts()
    accepted = check(plan(restore={"snapshot": "snap-1", "what": "trainingState"}), facts)
    assert accepted.parent == SNAPSHOT and accepted.engine.name == "sft-single"
    assert facts.asked == ["dataset", "pool", "model", "snapshot", "readable", "damage weights",
                           "damage trainingState"]
    damaged = Facts(damage={"trainingState": Damage("training_state/optimizer.pt", "is missing")})
    refused = refusal(plan(restore={"snapshot": "snap-1", "what": "trainingState"}), damaged)
    assert refused.message == reasons.snapshot_damaged("snap-1", "training_state/optimizer.pt", "is missing")
    assert refused.details == {"field": "restore", "snapshot": "snap-1", "file": "training_state/optimizer.pt"}


def test_the_first_rule_broken_is_the_one_said_and_later_facts_are_not_looked_up():
    # an unknown pool, a batch that does not split and an unknown snapshot: the pool is said
    broken = plan(execution={"pool": "gpu", "gpus": 2}, hyperparameters={"batchSize": 3},
                  restore={"snapshot": "snap-9", "what": "weights"})
    facts = Facts()
    assert refusal(broken, facts).message == reasons.pool_unknown("gpu")
    assert facts.asked == ["dataset", "pool"]
    # the engine's refusal comes before the batch split, as it always did
    refused = refusal(plan(execution={"pool": "default", "gpus": 4}, hyperparameters={"batchSize": 3}))
    assert refused.message == reasons.gpus_exceed_every_node(gpus=4, pool="default", largest_node_gpus=2)
    # a lookup's own refusal comes where the rules reach it
    facts = Facts(dataset=NotFound("dataset ds-1 does not exist"))
    assert refusal(plan(), facts).message == "dataset ds-1 does not exist" and facts.asked == ["dataset"]


def test_sentences_word_for_word():
    assert reasons.snapshot_unknown("snap-9") == "snapshot snap-9 does not exist"
    assert reasons.run_already_ended("run-1", "FAILED") == "run run-1 has already ended (FAILED)"
    assert reasons.run_queued(pool="default", gpus=2, engine="sft-ddp") == (
        "queued in pool default for 2 GPU(s); engine sft-ddp")
    assert reasons.run_queued(pool="default", gpus=2, engine="sft-ddp", device_kind="cpu") == (
        "queued in pool default for 2 CPU slot(s); engine sft-ddp")  # a pool of CPU nodes: slots
    assert reasons.run_resumed(pool="default", gpus=1) == "resumed by the user; queued in pool default for 1 GPU(s)"
    assert reasons.run_resumed(pool="default", gpus=1, device_kind="cpu") == (
        "resumed by the user; queued in pool default for 1 CPU slot(s)")
    assert reasons.claim_queued(pool="big", gpus=4) == "queued in pool big for 4 GPU(s)"
    assert reasons.granted(gpus=2, node="n", devices=["cpu:0", "cpu:1"]) == "granted 2 CPU slot(s) on node n (cpu:0, cpu:1)"
    assert reasons.RUN_CANCEL_REQUESTED == "cancel requested by the user"
    assert reasons.RUN_CANCELLED == "cancelled by the user"
    assert reasons.RUN_PAUSE_REQUESTED == "pause requested by the user"
