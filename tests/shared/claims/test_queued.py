"""The cap on the claims one workload may have queued (shared/claims/queued.py), against a real
Redis: what it counts is kept in step with submit, grant, release and re-queue, and it never
counts what is no longer queued (a stale id, a reservation whose request failed)."""

from __future__ import annotations

import threading

import pytest

from shared import reasons
from shared.claims import queued
from shared.claims.queue import ClaimQueue
from shared.config.deployment import parse_config
from shared.errors import TooManyQueued
from shared.lifecycle.states import ClaimState
from tests.claim_fixtures import CONFIG, REDIS_URL

CAP = 3


@pytest.fixture
def capped(redis_client, keys, prefix) -> ClaimQueue:
    config = parse_config({**CONFIG, "scheduling": {"maxQueuedPerWorkload": CAP}},
                          env={"TRAINING_KEY_PREFIX": prefix, "TRAINING_REDIS_URL": REDIS_URL})
    return ClaimQueue(redis_client, keys, config=config)


def submit(queue, resource, *, workload="team", kind="run", pool="default", **more):
    return queue.submit(kind=kind, resource_id=resource, pool=pool, gpus=1, workload=workload, **more)


def counted(redis_client, keys, workload="team") -> set[str]:
    return set(redis_client.zrange(keys.workload_queued(workload), 0, -1))


def test_every_kind_counts_toward_one_cap_per_workload(capped, redis_client, keys):
    claims = [submit(capped, "run-a"), submit(capped, "eval-b", kind="evaluation"),
              submit(capped, "ep-c", kind="endpoint", pool="gpu")]
    assert counted(redis_client, keys) == {c["id"] for c in claims}
    with pytest.raises(TooManyQueued) as refused:
        submit(capped, "run-d")
    assert refused.value.status == 429 and refused.value.code == "too_many_queued"
    assert refused.value.message == reasons.queued_claims_cap(workload="team", cap=CAP, queued=CAP, asked=1)
    assert refused.value.details == {"workload": "team", "queued": CAP, "maxQueued": CAP}
    assert capped.current("run-d") is None and len(capped.waiting("default")) == 2  # nothing more queued
    submit(capped, "run-e", workload="other")  # another workload's cap is its own


def test_a_grant_a_release_and_a_requeue_keep_the_count_in_step(capped, redis_client, keys, config):
    a, b, c = (submit(capped, f"run-{x}") for x in "abc")
    capped.release(a["id"])
    assert counted(redis_client, keys) == {b["id"], c["id"]}
    granted = capped.grant_pass(config, "default")  # two CPU slots: both start
    assert {g["id"] for g in granted} == {b["id"], c["id"]} and counted(redis_client, keys) == set()
    waiting = [submit(capped, f"run-{x}")["id"] for x in "def"]  # the cap is full again
    requeued = capped.requeue(b["id"])  # a lost worker's run waits again: it counts, and is not refused,
    assert counted(redis_client, keys) == {*waiting, requeued["id"]}  # for it was queued before


def test_a_stale_id_or_an_abandoned_reservation_is_not_counted(capped, redis_client, keys):
    import time

    first = submit(capped, "run-a")
    granted = submit(capped, "run-b")
    capped.grant_pass(capped.config, "default")  # both start: neither counts any more
    assert counted(redis_client, keys) == set()
    # as a writer that does not know the set would leave it: a granted claim's id still in it
    redis_client.zadd(keys.workload_queued("team"), {first["id"]: time.time(), granted["id"]: time.time()})
    abandoned = capped.reserve(workload="team", count=2)  # past the cap as counted: pruned first
    assert counted(redis_client, keys) == set(abandoned)
    capped.reserve(workload="team")  # the abandoned places (requests that failed) still count
    with pytest.raises(TooManyQueued):
        capped.reserve(workload="team")
    long_ago = time.time() - queued.RESERVATION_TTL_S - 1
    redis_client.zadd(keys.workload_queued("team"), {abandoned[0]: long_ago})  # ... until it has lived its time
    capped.reserve(workload="team")
    assert abandoned[0] not in counted(redis_client, keys) and len(counted(redis_client, keys)) == CAP


def test_a_place_not_used_is_given_back(capped, redis_client, keys):
    places = capped.reserve(workload="team", count=2)
    claim = submit(capped, "run-a", claim_id=places[0])
    capped.give_back(workload="team", claim_ids=places)
    assert counted(redis_client, keys) == {claim["id"]}  # the submitted one stays: it is the claim's
    with pytest.raises(Exception):
        submit(capped, "run-a")  # already has a live claim: the place it reserved is given back
    assert counted(redis_client, keys) == {claim["id"]}


def test_a_reservation_of_several_is_all_or_none(capped, redis_client, keys):
    submit(capped, "run-a")
    with pytest.raises(TooManyQueued) as refused:
        capped.reserve(workload="team", count=CAP)
    assert refused.value.message == reasons.queued_claims_cap(workload="team", cap=CAP, queued=1, asked=CAP)
    assert len(counted(redis_client, keys)) == 1


def test_concurrent_reservations_never_pass_the_cap(capped, redis_client, keys):
    got, refused = [], []

    def one():
        try:
            got.extend(capped.reserve(workload="team"))
        except TooManyQueued:
            refused.append(1)

    threads = [threading.Thread(target=one) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == CAP and len(refused) == 12 - CAP and len(counted(redis_client, keys)) == CAP


def test_without_a_config_nothing_is_capped(redis_client, keys):
    plain = ClaimQueue(redis_client, keys)
    for i in range(CAP + 2):
        submit(plain, f"run-{i}")
    assert len(counted(redis_client, keys)) == CAP + 2  # counted all the same, for the capped API's next submit
