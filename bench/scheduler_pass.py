"""Scheduler benchmark (not a test): `python bench/scheduler_pass.py`.

1. One scheduling pass over 10,000 waiting claims in 50 pools: `ClaimQueue.grant_pass` over every
   pool on the real Redis, (a) in the steady state (nothing changed since the last pass) and (b)
   right after every held claim was released (the pass grants). Baselines from the same run: the
   pure `plan_grants` over the same claims in memory, and reading every claim of every queue
   (what the pass did before it read only as far as the head blocks).
2. Sustained grants per second: submit -> grant_pass -> release, in batches, on one pool.

Runs under a prefix of its own (`bench-RANDOM:`) on TRAINING_BENCH_REDIS_URL
(default redis://127.0.0.1:6379/13) and deletes its keys at the end. Results: docs/scheduler-benchmark.md.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from shared.claims.grants import claim_view, plan_grants  # noqa: E402
from shared.claims.queue import ClaimQueue  # noqa: E402
from shared.config import parse_config  # noqa: E402
from shared.keys import Keys  # noqa: E402
from shared.store import connect  # noqa: E402

URL = os.environ.get("TRAINING_BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
POOLS, CLAIMS, NODES, DEVICES = 50, 10_000, 2, 8


def timed(fn, repeat):
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), min(samples)


def main() -> None:
    prefix = f"bench-{secrets.token_hex(4)}:"
    rng = random.Random(1)
    pools = {f"p{i:02d}": {"nodes": [{"name": f"p{i:02d}-n{j}", "devices": {"kind": "cuda", "count": DEVICES}}
                                     for j in range(NODES)], "quotas": {"team-a": 8, "team-b": 12}}
             for i in range(POOLS)}
    pools["tput"] = {"nodes": [{"name": "tput-n", "devices": {"kind": "cuda", "count": 64}}]}
    # 10,000 claims of three workloads wait at once: far past the API's default cap on queued claims
    config = parse_config({"pools": pools, "scheduling": {"maxQueuedPerWorkload": CLAIMS}},
                          env={"TRAINING_KEY_PREFIX": prefix, "TRAINING_REDIS_URL": URL})
    client = connect(URL)
    keys = Keys(prefix)
    queue = ClaimQueue(client, keys, config=config)
    names = [p for p in config.pools if p != "tput"]
    try:
        start = time.perf_counter()
        for n in range(CLAIMS):
            queue.submit(kind="run", resource_id=f"run-{n}", pool=names[n % POOLS], gpus=rng.choice([1, 2, 4, 8]),
                         workload=rng.choice(["runs", "team-a", "team-b"]))
        submit_s = time.perf_counter() - start
        all_pools = lambda: [queue.grant_pass(config, p) for p in names]  # noqa: E731
        first_grants = sum(len(g) for g in all_pools())
        waiting = sum(client.zcard(keys.pool_queue(p)) for p in names)

        steady_med, steady_min = timed(all_pools, 20)

        def release_all_then_pass():
            for p in names:
                for claim_id in client.smembers(keys.pool_held(p)):
                    queue.release(claim_id)
            t0 = time.perf_counter()
            granted = sum(len(g) for g in all_pools())
            return time.perf_counter() - t0, granted
        granting = [release_all_then_pass() for _ in range(5)]
        grant_pass_med = statistics.median(t for t, _ in granting)
        grants_per_pass = statistics.median(g for _, g in granting)

        # baselines: the same claims in memory, and reading every claim of every queue
        snapshot = {p: ([claim_view(c) for c in queue.held(p)], [claim_view(c) for c in queue.waiting(p)])
                    for p in names}
        counts = {p: {n.name: n.device_count for n in config.pool(p).nodes} for p in names}
        empty = lambda: [plan_grants(counts[p], [], snapshot[p][1], config.pool(p).quotas) for p in names]  # noqa: E731
        pure_med, _ = timed(empty, 20)

        def read_everything():
            for p in names:
                ids = client.zrange(keys.pool_queue(p), 0, -1)
                [json.loads(r) for r in client.mget([keys.claim(i) for i in ids])]
        read_med, _ = timed(read_everything, 10)

        # sustained grants per second on one 64-device pool
        batch, granted, n = 64, 0, 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 3.0:
            for _ in range(batch):
                n += 1
                queue.submit(kind="run", resource_id=f"tput-{n}", pool="tput", gpus=1, workload="runs")
            got = queue.grant_pass(config, "tput")
            granted += len(got)
            for claim in got:
                queue.release(claim["id"])
        tput_s = time.perf_counter() - t0
    finally:
        found = list(client.scan_iter(match=f"{prefix}*", count=1000))
        for i in range(0, len(found), 1000):
            client.delete(*found[i:i + 1000])

    ms = lambda s: f"{s * 1000:.1f} ms"  # noqa: E731
    print(f"setup: {CLAIMS} claims in {POOLS} pools of {NODES}x{DEVICES} devices, submitted in {submit_s:.1f} s "
          f"({CLAIMS / submit_s:,.0f} submits/s); first pass granted {first_grants}; {waiting} left waiting")
    print(f"grant_pass over all {POOLS} pools, steady state (nothing changed): median {ms(steady_med)}, "
          f"min {ms(steady_min)}")
    print(f"grant_pass over all {POOLS} pools right after every release (grants {grants_per_pass:.0f}): "
          f"median {ms(grant_pass_med)}")
    print(f"baseline: pure plan_grants over the same {waiting} claims in memory (empty pools): {ms(pure_med)} "
          f"-> the Redis pass costs {grant_pass_med / pure_med:.1f}x the pure rules")
    print(f"baseline: reading every waiting claim of every queue (the old pass's read alone): {ms(read_med)} "
          f"-> {read_med / grant_pass_med:.1f}x the granting pass, {read_med / steady_med:.0f}x the steady pass")
    print(f"sustained: {granted} grants in {tput_s:.2f} s = {granted / tput_s:,.0f} grants/s "
          f"(submit -> grant_pass -> release, batches of {batch})")


if __name__ == "__main__":
    main()
