"""The one rule of a claim that could never be granted (shared/claims/fits.py): the API's
evaluations and endpoints check it before storing anything, the claim queue checks it again as it
queues a claim, and both say the same sentence with the same status."""

from __future__ import annotations

import pytest

from shared import reasons
from shared.claims.fits import check_claim, pool_named, refuse_never_granted
from shared.config.deployment import parse_config
from shared.errors import NotFound, Unprocessable
from tests.claim_fixtures import CONFIG

CONFIG_ = parse_config(CONFIG, env={})


def test_an_unknown_pool_is_a_404_naming_the_field_and_the_pools():
    with pytest.raises(NotFound) as refused:
        pool_named(CONFIG_, "nowhere", field="execution.pool")
    assert refused.value.status == 404
    assert refused.value.message == "pool nowhere does not exist in this deployment" == reasons.pool_unknown("nowhere")
    assert refused.value.details == {"field": "execution.pool", "pool": "nowhere", "pools": ["default", "gpu"]}
    with pytest.raises(NotFound) as read:  # GET /v1/pools/NAME: no field of a body named it
        pool_named(CONFIG_, "nowhere")
    assert (read.value.message, read.value.details) == (refused.value.message, {"pool": "nowhere",
                                                                                "pools": ["default", "gpu"]})
    assert pool_named(CONFIG_, "gpu").name == "gpu"


@pytest.mark.parametrize("kind", ["run", "evaluation", "endpoint"])
def test_more_than_any_node_and_more_than_the_quota_are_422_for_every_kind(kind):
    gpu = CONFIG_.pool("gpu")
    with pytest.raises(Unprocessable) as too_big:
        refuse_never_granted(gpu, kind=kind, gpus=5, workload="endpoints", field="gpus")
    assert too_big.value.message == (f"this {kind} asks for 5 GPU(s) of one node, and the largest node of pool gpu "
                                     "has 4")
    assert too_big.value.details == {"field": "gpus"}
    with pytest.raises(Unprocessable) as over_quota:
        refuse_never_granted(gpu, kind=kind, gpus=3, workload="endpoints", field="execution.gpus")
    assert over_quota.value.message == (f"this {kind} asks for 3 GPU(s), and workload endpoints may hold at most "
                                        "2 GPU(s) in pool gpu")
    assert over_quota.value.details == {"field": "execution.gpus", "quota": 2}
    refuse_never_granted(gpu, kind=kind, gpus=2, workload="endpoints")  # fits: nothing raised
    refuse_never_granted(gpu, kind=kind, gpus=4, workload="runs")  # no quota for this workload


def test_check_claim_is_both_rules_in_order():
    with pytest.raises(NotFound):  # the pool first: there is no node to measure against
        check_claim(CONFIG_, kind="run", pool="nowhere", gpus=99, workload="runs")
    with pytest.raises(Unprocessable) as refused:
        check_claim(CONFIG_, kind="endpoint", pool="gpu", gpus=3, workload="endpoints")
    assert "workload endpoints may hold at most 2" in refused.value.message
    assert check_claim(CONFIG_, kind="run", pool="default", gpus=1, workload="runs").name == "default"
