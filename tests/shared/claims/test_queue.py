"""The claim queues against a real Redis: submit, grant, release, and concurrent schedulers."""

from __future__ import annotations

import random
import threading

import pytest

from shared import reasons
from shared.claims.queue import ClaimQueue
from shared.errors import Conflict, NotFound, Unprocessable, ValidationFailed
from shared.lifecycle.states import ClaimState
from shared.store.documents import connect


def submit(queue, resource="run-x", *, pool="default", gpus=1, workload="runs", **more):
    return queue.submit(kind="run", resource_id=resource, pool=pool, gpus=gpus, workload=workload, **more)


def test_submit_queues_a_waiting_claim_and_wakes_the_scheduler(queue, redis_client, keys):
    claim = submit(queue, "run-a", gpus=2)
    assert claim["id"].startswith("claim-")
    assert claim["state"] == ClaimState.WAITING
    assert (claim["kind"], claim["resource"], claim["pool"], claim["gpus"], claim["workload"]) == (
        "run", "run-a", "default", 2, "runs")
    assert claim["node"] is None and claim["devices"] == [] and claim["grantedAt"] is None
    assert queue.get(claim["id"]) == claim
    assert queue.current("run-a") == claim
    assert [c["id"] for c in queue.waiting("default")] == [claim["id"]]
    submit(queue, "run-b")
    assert redis_client.lrange(keys.scheduler_wakeup(), 0, -1) == ["1"]  # one token is enough


def test_claims_wait_in_submission_order(queue):
    ids = [submit(queue, f"run-{i}")["id"] for i in range(5)]
    seqs = [c["seq"] for c in queue.waiting("default")]
    assert [c["id"] for c in queue.waiting("default")] == ids
    assert seqs == sorted(seqs)


def test_grant_pass_grants_what_fits_and_moves_it_to_the_held_set(queue, config):
    a, b, c = submit(queue, "run-a"), submit(queue, "run-b"), submit(queue, "run-c")
    granted = queue.grant_pass(config, "default")
    assert [g["id"] for g in granted] == [a["id"], b["id"]]
    assert [g["devices"] for g in granted] == [["cpu:0"], ["cpu:1"]]
    stored = queue.get(a["id"])
    assert stored["state"] == ClaimState.GRANTED and stored["node"] == "local" and stored["grantedAt"]
    assert stored["dispatchedAt"] is None
    assert [h["id"] for h in queue.held("default")] == [a["id"], b["id"]]
    assert [w["id"] for w in queue.waiting("default")] == [c["id"]]
    assert queue.grant_pass(config, "default") == []


def test_grant_pass_names_cuda_devices_and_obeys_quotas(queue, config):
    e1 = queue.submit(kind="endpoint", resource_id="ep-1", pool="gpu", gpus=2, workload="endpoints", model="m")
    e2 = queue.submit(kind="endpoint", resource_id="ep-2", pool="gpu", gpus=1, workload="endpoints")
    r = submit(queue, "run-r", pool="gpu", gpus=4)
    granted = {g["id"]: g for g in queue.grant_pass(config, "gpu")}
    assert granted[e1["id"]]["node"] == "small" and granted[e1["id"]]["devices"] == ["cuda:0", "cuda:1"]
    assert granted[e1["id"]]["model"] == "m"
    assert e2["id"] not in granted  # passed over: endpoints may hold 2 GPUs of this pool
    assert granted[r["id"]]["node"] == "big"


def test_release_is_idempotent_and_frees_devices_for_the_next_claim(queue, config, redis_client, keys):
    a, b = submit(queue, "run-a", gpus=2), submit(queue, "run-b")
    queue.grant_pass(config, "default")
    assert queue.grant_pass(config, "default") == []
    redis_client.delete(keys.scheduler_wakeup())
    released = queue.release(a["id"])
    assert released["state"] == ClaimState.RELEASED and released["releasedAt"]
    assert queue.release(a["id"]) == released
    assert queue.current("run-a") is None
    assert queue.held("default") == []
    assert redis_client.lrange(keys.scheduler_wakeup(), 0, -1) == ["1"]
    [granted] = queue.grant_pass(config, "default")
    assert granted["id"] == b["id"] and granted["devices"] == ["cpu:0"]


def test_release_of_a_waiting_claim_leaves_the_queue(queue):
    a = submit(queue, "run-a")
    queue.release(a["id"])
    assert queue.waiting("default") == []
    assert queue.release("claim-unknown") is None


def test_a_requeued_claim_keeps_its_place(queue, config):
    a = submit(queue, "run-a")
    queue.grant_pass(config, "default")
    b = submit(queue, "run-b", gpus=2)
    again = queue.requeue(a["id"])
    assert again["seq"] == a["seq"] and again["id"] != a["id"]
    assert queue.get(a["id"])["state"] == ClaimState.RELEASED
    assert [c["id"] for c in queue.waiting("default")] == [again["id"], b["id"]]
    assert queue.current("run-a")["id"] == again["id"]


def test_submit_with_a_seq_keeps_it(queue):
    later = submit(queue, "run-later")
    early = submit(queue, "run-early", seq=later["seq"] - 1)
    assert early["seq"] == later["seq"] - 1
    assert [c["id"] for c in queue.waiting("default")] == [early["id"], later["id"]]


def test_a_resource_holds_one_live_claim_at_a_time(queue):
    a = submit(queue, "run-a")
    with pytest.raises(Conflict):
        submit(queue, "run-a")
    queue.release(a["id"])
    assert submit(queue, "run-a")["state"] == ClaimState.WAITING


def test_stale_queue_entries_are_dropped_and_block_nothing(queue, config, redis_client, keys):
    redis_client.zadd(keys.pool_queue("default"), {"claim-vanished": 0})
    redis_client.sadd(keys.pool_held("default"), "claim-gone")
    a = submit(queue, "run-a", gpus=2)
    assert [g["id"] for g in queue.grant_pass(config, "default")] == [a["id"]]
    assert redis_client.zcard(keys.pool_queue("default")) == 0
    assert redis_client.smembers(keys.pool_held("default")) == {a["id"]}


def test_claims_that_could_never_be_granted_are_refused(queue):
    with pytest.raises(ValueError):
        queue.submit(kind="job", resource_id="x", pool="default", gpus=1, workload="runs")
    with pytest.raises(Unprocessable) as too_big:
        submit(queue, pool="gpu", gpus=5)
    assert too_big.value.message == reasons.gpus_exceed_every_node(gpus=5, pool="gpu", largest_node_gpus=4)
    with pytest.raises(Unprocessable) as over_quota:
        queue.submit(kind="endpoint", resource_id="ep-1", pool="gpu", gpus=3, workload="endpoints")
    assert over_quota.value.message == reasons.gpus_exceed_quota(gpus=3, workload="endpoints", pool="gpu", quota_gpus=2,
                                                                 kind="endpoint")
    with pytest.raises(NotFound) as unknown:  # the one sentence and status of an unknown pool (fits.py)
        submit(queue, pool="nowhere")
    assert unknown.value.message == reasons.pool_unknown("nowhere")
    with pytest.raises(ValidationFailed):
        submit(queue, gpus=0)
    assert queue.waiting("gpu") == []


def test_concurrent_granters_never_grant_a_device_twice(queue, config, keys, redis_url):
    """Four schedulers, each with its own connection, grant and release claims of one pool
    (2 + 4 devices) at once. A ledger records every device from the moment a grant returns until
    just before its release, so a device granted twice would be found in it."""
    claims = [submit(queue, f"run-{i}", pool="gpu", gpus=random.choice([1, 1, 2, 3])) for i in range(60)]
    ledger: dict[str, str] = {}  # "node/device" -> claim id
    lock = threading.Lock()
    seen: list[str] = []
    errors: list[str] = []

    def scheduler(seed: int) -> None:
        rng = random.Random(seed)
        mine = ClaimQueue(connect(redis_url), keys, config=config)
        holding: list[dict] = []
        for _ in range(200):
            for claim in mine.grant_pass(config, "gpu"):
                with lock:
                    seen.append(claim["id"])
                    for device in claim["devices"]:
                        slot = f"{claim['node']}/{device}"
                        if slot in ledger:
                            errors.append(f"{slot} granted to {ledger[slot]} and {claim['id']}")
                        ledger[slot] = claim["id"]
                holding.append(claim)
            if holding and rng.random() < 0.5:
                claim = holding.pop(rng.randrange(len(holding)))
                with lock:
                    for device in claim["devices"]:
                        del ledger[f"{claim['node']}/{device}"]
                mine.release(claim["id"])
            if len(seen) == len(claims) and not holding:
                return

    threads = [threading.Thread(target=scheduler, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert len(seen) == len(set(seen))  # no claim granted twice
    held_devices = [(c["node"], d) for c in queue.held("gpu") for d in c["devices"]]
    assert len(held_devices) == len(set(held_devices))
    assert len(seen) > 20
