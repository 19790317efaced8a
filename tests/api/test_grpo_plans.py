"""grpo plans at submission (SPEC 2.3, 3.1, 4): what base-models lists is what the API accepts, the
rest is refused with the SPEC 3.1 sentence, and rewards that could never be scored are a 4xx
naming the field."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

import pytest

from services.api.app import create_app
from shared import reasons
from tests.conftest import make_config

PROMPTS = b"\n".join(json.dumps({"prompt": f"q{i}", "answer": f"a{i}"}).encode() for i in range(4))
EXACT = [{"function": "exact_match", "weight": 1.0}]


@pytest.fixture
def prompts(client, admin):
    resp = client.post("/v1/datasets", headers=admin, data={"file": (io.BytesIO(PROMPTS), "p.jsonl")},
                       content_type="multipart/form-data")
    assert resp.json["format"] == "prompt"
    return resp.json["id"]


def grpo_plan(dataset, *, gpus=1, kl=0.0, rewards=None, precision="fp32", **extra):
    return {"method": "grpo", "model": "builtin/tiny-qwen3", "dataset": dataset, "precision": precision,
            "execution": {"gpus": gpus}, "hyperparameters": {"maxSteps": 5, "batchSize": 8},
            "grpo": {"klPenalty": kl, "numGenerations": 4, "rewards": EXACT if rewards is None else rewards}, **extra}


def test_listed_fresh_grpo_runs_are_accepted_and_an_unlisted_one_is_refused(client, admin, prompts):
    """Every grpo combination base-models lists without a restore is accepted with its engine (the
    restores are checked against the same declarations in tests/shared/planning/test_resolver_engines.py);
    4 slots (pool big) are not listed for the tiny model, which trains on 1 or 2, and are refused."""
    rows = [r for r in client.get("/v1/base-models/builtin/tiny-qwen3", headers=admin).json["startableRuns"]
            if r["method"] == "grpo"]
    assert {(r["gpus"], r["klPenalty"], r["restore"], r["engine"]) for r in rows} == {
        (gpus, kl, restore, engine) for gpus, engine in ((1, "grpo-single"), (2, "grpo-ddp"))
        for kl in (False, True) for restore in ("none", "weights", "trainingState")}
    for row in rows:
        if row["restore"] != "none":
            continue
        resp = client.post("/v1/runs", headers=admin, json=grpo_plan(
            prompts, gpus=row["gpus"], kl=0.1 if row["klPenalty"] else 0.0, precision=row["precision"]))
        assert resp.status_code == 201, resp.json
        assert resp.json["engine"] == row["engine"]
    for kl in (0.0, 0.2):
        resp = client.post("/v1/runs", headers=admin, json=grpo_plan(prompts, gpus=4, kl=kl,
                                                                     execution={"gpus": 4, "pool": "big"}))
        assert resp.status_code == 422
        assert resp.json["error"]["message"] == reasons.engine_refused(method="grpo", kl_penalty=kl,
                                                                       restores_weights=False, gpus=4)
    assert resp.json["error"]["message"] == "this deployment does not train grpo with a KL penalty on 4 GPU(s)"


@pytest.mark.parametrize(("rewards", "field", "words"), [
    ([], "grpo.rewards", reasons.GRPO_NEEDS_REWARDS),
    ([{"function": "no_such"}], "grpo.rewards.0.function", "no reward function no_such in this deployment"),
    ([{"function": "exact_match"}, {"function": "regex"}], "grpo.rewards.1.pattern",
     "the regex reward needs a pattern"),
    ([{"function": "regex", "pattern": "("}], "grpo.rewards.0.pattern",
     reasons.reward_pattern_refused("grpo.rewards.0", "missing ): (")),
    # RE2 has no lookaround or backreferences: refused at submission, never matched by another engine
    ([{"function": "regex", "pattern": "(?=x)x"}], "grpo.rewards.0.pattern",
     reasons.reward_pattern_refused("grpo.rewards.0", "invalid perl operator: (?=")),
    ([EXACT[0], {"function": "regex", "pattern": r"(a)\1"}], "grpo.rewards.1.pattern",
     reasons.reward_pattern_refused("grpo.rewards.1", r"invalid escape sequence: \1")),
    ([{"function": "length"}], "grpo.rewards.0.target", "the length reward needs a target"),
    ([{"function": "exact_match", "judge": "ep-x"}], "grpo.rewards.0", "not both"),
    ([{"function": "exact_match", "threshold": 0.5}], "grpo.rewards.0.threshold",
     reasons.reward_parameter_unknown("grpo.rewards.0", "exact_match", "threshold", ["field"])),
    ([{"judge": "ep-x", "threshold": 0.5}], "grpo.rewards.0.threshold",
     reasons.reward_judge_parameter("grpo.rewards.0", "threshold")),
])
def test_rewards_that_cannot_be_scored_are_400_naming_the_field(client, admin, prompts, rewards, field, words):
    resp = client.post("/v1/runs", headers=admin, json=grpo_plan(prompts, rewards=rewards))
    assert resp.status_code == 400, resp.json
    assert words in resp.json["error"]["message"] and resp.json["error"]["details"]["field"] == field
    assert client.get("/v1/runs", headers=admin).json["items"] == []


def test_a_pattern_that_backtracks_for_ever_in_python_is_taken(client, admin, prompts):
    """Issue 26's pattern: RE2 matches it in linear time, so it is a plan like any other."""
    resp = client.post("/v1/runs", headers=admin,
                       json=grpo_plan(prompts, rewards=[{"function": "regex", "pattern": "(.*.*)*Z"}]))
    assert resp.status_code == 201, resp.json


def test_judges_must_be_endpoints_that_have_not_ended(client, admin, prompts):
    resp = client.post("/v1/runs", headers=admin, json=grpo_plan(prompts, rewards=[{"judge": "ep-nowhere"}]))
    assert resp.status_code == 404
    assert resp.json["error"]["message"] == reasons.judge_unknown("ep-nowhere")
    assert resp.json["error"]["details"]["field"] == "grpo.rewards.0.judge"
    judge = client.post("/v1/endpoints", headers=admin, json={"model": "builtin/tiny-qwen3", "name": "grader"}).json
    for name in (judge["id"], "grader"):  # by id, or by the name of a live endpoint
        body = grpo_plan(prompts, rewards=[*EXACT, {"judge": name, "weight": 0.5}])
        resp = client.post("/v1/runs", headers=admin, json=body)
        assert resp.status_code == 201, resp.json
    client.delete(f"/v1/endpoints/{judge['id']}", headers=admin)
    resp = client.post("/v1/runs", headers=admin, json=grpo_plan(prompts, rewards=[{"judge": judge["id"]}]))
    assert resp.status_code == 422 and resp.json["error"]["details"]["field"] == "grpo.rewards.0.judge"
    assert resp.json["error"]["message"] == reasons.judge_ended(judge["id"], "TERMINATED")
    resp = client.post("/v1/runs", headers=admin, json=grpo_plan(prompts, rewards=[{"judge": "grader"}]))
    assert resp.status_code == 404  # no live endpoint has that name any more


def test_batch_size_counts_whole_groups_and_sft_takes_no_grpo_settings(client, admin, prompts, dataset):
    body = grpo_plan(prompts)
    body["hyperparameters"]["batchSize"] = 6
    resp = client.post("/v1/runs", headers=admin, json=body)
    assert resp.status_code == 400 and resp.json["error"]["details"]["field"] == "hyperparameters.batchSize"
    assert resp.json["error"]["message"] == reasons.grpo_batch_not_a_multiple(batch_size=6, generations=4)
    body = grpo_plan(prompts, gpus=2)
    body["hyperparameters"].update(batchSize=12, gradientAccumulation=2)  # 3 groups of 4: 12 % (2 x 2) = 0
    assert client.post("/v1/runs", headers=admin, json=body).status_code == 201
    body["hyperparameters"].update(batchSize=4, gradientAccumulation=4)
    resp = client.post("/v1/runs", headers=admin, json=body)
    assert resp.status_code == 400 and resp.json["error"]["details"]["field"] == "hyperparameters.batchSize"
    assert resp.json["error"]["message"] == reasons.batch_not_split(batch_size=4, gpus=2, accumulation=4)
    sft = {"method": "sft", "model": "builtin/tiny-qwen3", "dataset": dataset, "grpo": {"klPenalty": 0.1}}
    resp = client.post("/v1/runs", headers=admin, json=sft)
    assert resp.status_code == 400 and resp.json["error"]["message"] == reasons.grpo_on_sft_run("sft")
    resp = client.post("/v1/runs", headers=admin, json=grpo_plan(prompts, validationDataset=prompts))
    assert resp.status_code == 400 and resp.json["error"]["details"]["field"] == "validationDataset"
    assert resp.json["error"]["message"] == reasons.GRPO_NO_VALIDATION
    # a grpo run trains on chat rows too: the last assistant message is the answer
    assert client.post("/v1/runs", headers=admin, json=grpo_plan(dataset)).status_code == 201


@pytest.fixture
def deployed(redis_url, key_prefix, shared_artifacts):
    """A deployment that registers reward functions of its own (tests/shared/rewards/test_rewards.py holds them)."""
    from tests.conftest import ADMIN_TOKEN, mark_nodes_alive

    config = make_config(redis_url, key_prefix, shared_artifacts, rewardFunctions={
        "shout": "tests.shared.rewards.test_rewards:registered_reward",
        "at_least": "tests.shared.rewards.test_rewards:thresholded_reward",
        "anything": "tests.shared.rewards.test_rewards:open_reward", "elsewhere": "no_such_package_here.rewards:score"})
    app = create_app(config)
    context = app.extensions["trainer"]
    mark_nodes_alive(context.redis, context.keys, config)
    client, admin = app.test_client(), {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    ds = client.post("/v1/datasets", headers=admin, data={"file": (io.BytesIO(PROMPTS), "p.jsonl")},
                     content_type="multipart/form-data").json["id"]
    return SimpleNamespace(config=config, client=client, admin=admin, dataset=ds)


def test_registered_reward_functions_are_known_by_name(deployed, redis_url, key_prefix, shared_artifacts):
    assert deployed.config.reward_functions["shout"] == "tests.shared.rewards.test_rewards:registered_reward"
    resp = deployed.client.post("/v1/runs", headers=deployed.admin,
                                json=grpo_plan(deployed.dataset, rewards=[{"function": "shout"}]))
    assert resp.status_code == 201, resp.json
    with pytest.raises(Exception, match="rewardFunctions.bad"):
        make_config(redis_url, key_prefix, shared_artifacts, rewardFunctions={"bad": "no-colon"})


def test_a_registered_function_gets_the_parameters_its_signature_takes(deployed):
    """Checked at submission against the function's signature; kept in the plan as given."""
    client, admin, ds = deployed.client, deployed.admin, deployed.dataset
    rewards = [{"function": "at_least", "threshold": 3, "scale": 0.5, "weight": 2.0},
               {"function": "anything", "words": ["a", "b"], "options": {"strict": True}},
               {"function": "elsewhere", "whatever": 1}]  # not importable by the API: the worker checks it
    resp = client.post("/v1/runs", headers=admin, json=grpo_plan(ds, rewards=rewards))
    assert resp.status_code == 201, resp.json
    assert resp.json["plan"]["grpo"]["rewards"] == [{**r, "judge": None, "weight": r.get("weight", 1.0)}
                                                     for r in rewards]
    resp = client.post("/v1/runs", headers=admin, json=grpo_plan(ds, rewards=[
        {"function": "exact_match"}, {"function": "at_least", "threshold": 3, "limit": 9}]))
    assert resp.status_code == 400
    assert resp.json["error"]["message"] == (
        "grpo.rewards.1.limit: reward function at_least takes no parameter limit; it takes threshold, scale")
    assert resp.json["error"]["details"] == {"field": "grpo.rewards.1.limit", "takes": ["threshold", "scale"]}
    resp = client.post("/v1/runs", headers=admin, json=grpo_plan(ds, rewards=[{"function": "at_least"}]))
    assert resp.status_code == 400 and resp.json["error"]["details"]["field"] == "grpo.rewards.0.threshold"
    assert resp.json["error"]["message"] == reasons.reward_parameter_missing("grpo.rewards.0", "at_least", "threshold")


def test_an_evaluations_rewards_take_parameters_the_same_way(deployed):
    client, admin, ds = deployed.client, deployed.admin, deployed.dataset
    body = {"model": "builtin/tiny-qwen3", "dataset": ds}
    resp = client.post("/v1/evaluations", headers=admin, json={**body, "rewards": [
        {"function": "at_least", "threshold": 3}, {"function": "length", "target": 4}]})
    assert resp.status_code == 201, resp.json
    assert resp.json["rewards"][0] == {"function": "at_least", "judge": None, "weight": 1.0, "threshold": 3}
    resp = client.post("/v1/evaluations", headers=admin, json={**body, "rewards": [{"function": "shout", "bonus": 1,
                                                                                   "extra": 2}]})
    assert resp.status_code == 400 and resp.json["error"]["message"] == (
        "evaluation field rewards.0.extra: reward function shout takes no parameter extra; it takes bonus")
    assert resp.json["error"]["details"] == {"field": "rewards.0.extra", "takes": ["bonus"]}
    resp = client.post("/v1/evaluations", headers=admin, json={**body, "rewards": [{"function": "regex",
                                                                                   "pattern": "a", "target": 3}]})
    assert resp.status_code == 400 and resp.json["error"]["message"] == (
        "evaluation field rewards.0.target: reward function regex takes no parameter target; it takes pattern")
    assert len(client.get("/v1/evaluations", headers=admin).json["items"]) == 1  # the refused ones left nothing
