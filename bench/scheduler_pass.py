"""Scheduler benchmark (not a test): `python bench/scheduler_pass.py`.

1. One scheduling pass over 10,000 waiting claims in 50 pools: `ClaimQueue.grant_pass` over every
   pool on the real Redis, (a) in the steady state (nothing changed since the last pass) and (b)
   right after every held claim was released (the pass grants). Baselines from the same run: the
   pure `plan_grants` over the same claims in memory, and reading every claim of every queue
   (what the pass did before it read only as far as the head blocks).
2. Sustained grants per second: submit -> grant_pass -> release, in batches, on one pool.

A claim is granted only on a node whose worker is alive and ready (shared/claims/nodes.py), so the
bench first writes each node's keys as its worker and endpoint manager do while they run (the
same keys tests/conftest.py `mark_nodes_alive` writes). A pass that must grant and grants nothing
measures nothing: the bench then stops with a sentence saying which, exit code 1, instead of
printing figures (`--without-live-nodes` leaves the nodes without services, to show that it does).

Runs under a prefix of its own (`bench-RANDOM:`) on TRAINING_BENCH_REDIS_URL
(default redis://127.0.0.1:6379/13) and deletes its keys at the end. `--out FILE` also writes the
figures as JSON. Results: docs/scheduler-benchmark.md; tests/bench/test_scheduler_pass_bench.py
runs it on a tiny setting.
"""

from __future__ import annotations

import argparse
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
from shared.config.deployment import DeploymentConfig, parse_config  # noqa: E402
from shared.store.documents import connect  # noqa: E402
from shared.store.keys import Keys  # noqa: E402

URL = os.environ.get("TRAINING_BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
GPU_CHOICES = (1, 2, 4, 8)  # a claim's GPUs; the largest fits an empty node of DEVICES and each quota
QUOTAS = {"team-a": 8, "team-b": 12}
TPUT_DEVICES = 64  # the sustained part's pool: one node, a batch of 1-GPU claims fills it exactly


class NothingGranted(SystemExit):
    """A pass that must grant granted less: the figures would time a pass that does no work."""

    def __init__(self, what: str, granted: int, at_least: int):
        super().__init__(
            f"scheduler bench: {what} granted {granted} claim(s), and it must grant at least {at_least}; "
            "a claim is granted only on a node whose worker is alive and ready, so the figures would time "
            "a pass that grants nothing. Are the nodes' keys written (mark_nodes_alive)?")


def require_granted(what: str, granted: int, at_least: int) -> None:
    if granted < at_least:
        raise NothingGranted(what, granted, at_least)


def mark_nodes_alive(client, keys: Keys, config: DeploymentConfig) -> None:
    """Write each node's keys as its services do while they run: the worker's heartbeat and ready
    keys (services/trainer_worker/heartbeat.py) and the endpoint manager's lease
    (services/endpoint_manager/manager.py), without a TTL: the bench's keys are deleted at its end."""
    pipe = client.pipeline(transaction=False)
    for pool in config.pools.values():
        for node in pool.nodes:
            pipe.set(keys.node_alive(node.name), "bench")
            pipe.set(keys.node_ready(node.name), "bench")
            pipe.set(keys.endpoint_manager(node.name), "bench")
    pipe.execute()


def timed(fn, repeat):
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), min(samples)


def bench_config(prefix: str, url: str, *, pools: int, claims: int, nodes: int, devices: int) -> DeploymentConfig:
    declared = {f"p{i:02d}": {"nodes": [{"name": f"p{i:02d}-n{j}", "devices": {"kind": "cuda", "count": devices}}
                                        for j in range(nodes)], "quotas": dict(QUOTAS)}
                for i in range(pools)}
    declared["tput"] = {"nodes": [{"name": "tput-n", "devices": {"kind": "cuda", "count": TPUT_DEVICES}}]}
    # every claim of three workloads waits at once, with the sustained part's batch beside them: far
    # past the API's default cap on queued claims
    return parse_config({"pools": declared, "scheduling": {"maxQueuedPerWorkload": claims + TPUT_DEVICES}},
                        env={"TRAINING_KEY_PREFIX": prefix, "TRAINING_REDIS_URL": url})


def run(*, pools: int, claims: int, nodes: int, devices: int, sustained_s: float, url: str = URL,
        live_nodes: bool = True) -> dict:
    """The figures of one run (seconds, counts); NothingGranted when a pass that must grant did not."""
    if claims < pools or devices < max(GPU_CHOICES):
        raise SystemExit(f"scheduler bench: give every pool a claim and room for {max(GPU_CHOICES)} GPUs "
                         f"(--claims >= --pools, --devices >= {max(GPU_CHOICES)})")
    prefix = f"bench-{secrets.token_hex(4)}:"
    rng = random.Random(1)
    config = bench_config(prefix, url, pools=pools, claims=claims, nodes=nodes, devices=devices)
    client = connect(url)
    keys = Keys(prefix)
    queue = ClaimQueue(client, keys, config=config)
    names = [p for p in config.pools if p != "tput"]
    figures: dict = {"pools": pools, "claims": claims, "nodes": nodes, "devices": devices}
    try:
        if live_nodes:
            mark_nodes_alive(client, keys, config)
        start = time.perf_counter()
        for n in range(claims):
            queue.submit(kind="run", resource_id=f"run-{n}", pool=names[n % pools], gpus=rng.choice(GPU_CHOICES),
                         workload=rng.choice(["runs", *QUOTAS]))
        figures["submitS"] = time.perf_counter() - start
        all_pools = lambda: [queue.grant_pass(config, p) for p in names]  # noqa: E731
        # Each pool's nodes are empty and its head claim fits one of them within any quota: every
        # pool grants at least one claim.
        figures["firstGrants"] = sum(len(g) for g in all_pools())
        require_granted("the first pass", figures["firstGrants"], pools)
        figures["waiting"] = sum(client.zcard(keys.pool_queue(p)) for p in names)

        figures["steadyS"], figures["steadyMinS"] = timed(all_pools, 20)

        def release_all_then_pass():
            for p in names:
                for claim_id in client.smembers(keys.pool_held(p)):
                    queue.release(claim_id)
            with_waiting = sum(1 for p in names if client.zcard(keys.pool_queue(p)))  # each grants one at least
            t0 = time.perf_counter()
            granted = sum(len(g) for g in all_pools())
            elapsed = time.perf_counter() - t0
            require_granted("a pass right after every release", granted, with_waiting)
            return elapsed, granted
        granting = [release_all_then_pass() for _ in range(5)]
        figures["grantingS"] = statistics.median(t for t, _ in granting)
        figures["grantsPerPass"] = statistics.median(g for _, g in granting)

        # baselines: the same claims in memory, and reading every claim of every queue
        snapshot = {p: ([claim_view(c) for c in queue.held(p)], [claim_view(c) for c in queue.waiting(p)])
                    for p in names}
        counts = {p: {n.name: n.device_count for n in config.pool(p).nodes} for p in names}
        empty = lambda: [plan_grants(counts[p], [], snapshot[p][1], config.pool(p).quotas) for p in names]  # noqa: E731
        figures["pureS"], _ = timed(empty, 20)

        def read_everything():
            for p in names:
                ids = client.zrange(keys.pool_queue(p), 0, -1)
                [json.loads(r) for r in client.mget([keys.claim(i) for i in ids])]
        figures["readAllS"], _ = timed(read_everything, 10)

        # sustained grants per second on one pool: each batch of 1-GPU claims fills its node exactly,
        # and is released before the next, so every claim submitted is granted
        batch, granted, submitted = TPUT_DEVICES, 0, 0
        spent = {"submit": 0.0, "pass": 0.0, "release": 0.0}  # where the sustained part's time goes
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < sustained_s or submitted == 0:
            t1 = time.perf_counter()
            for _ in range(batch):
                submitted += 1
                queue.submit(kind="run", resource_id=f"tput-{submitted}", pool="tput", gpus=1, workload="runs")
            t2 = time.perf_counter()
            got = queue.grant_pass(config, "tput")
            t3 = time.perf_counter()
            granted += len(got)
            for claim in got:
                queue.release(claim["id"])
            spent["submit"], spent["pass"] = spent["submit"] + t2 - t1, spent["pass"] + t3 - t2
            spent["release"] += time.perf_counter() - t3
        figures["sustainedS"] = time.perf_counter() - t0
        require_granted("the sustained part", granted, submitted)
        figures.update(sustainedGrants=granted, batch=batch, sustainedSpentS=spent)
    finally:
        found = list(client.scan_iter(match=f"{prefix}*", count=1000))
        for i in range(0, len(found), 1000):
            client.delete(*found[i:i + 1000])
    return figures


def report(f: dict) -> list[str]:
    ms = lambda s: f"{s * 1000:.1f} ms"  # noqa: E731
    return [
        f"setup: {f['claims']} claims in {f['pools']} pools of {f['nodes']}x{f['devices']} devices (every node's "
        f"worker alive), submitted in {f['submitS']:.1f} s ({f['claims'] / f['submitS']:,.0f} submits/s); "
        f"first pass granted {f['firstGrants']}; {f['waiting']} left waiting",
        f"grant_pass over all {f['pools']} pools, steady state (nothing changed): median {ms(f['steadyS'])}, "
        f"min {ms(f['steadyMinS'])}",
        f"grant_pass over all {f['pools']} pools right after every release (grants {f['grantsPerPass']:.0f}): "
        f"median {ms(f['grantingS'])}",
        f"baseline: pure plan_grants over the same {f['waiting']} claims in memory (empty pools): {ms(f['pureS'])} "
        f"-> the Redis pass costs {f['grantingS'] / f['pureS']:.1f}x the pure rules",
        f"baseline: reading every waiting claim of every queue (the old pass's read alone): {ms(f['readAllS'])} "
        f"-> {f['readAllS'] / f['grantingS']:.1f}x the granting pass, {f['readAllS'] / f['steadyS']:.0f}x the "
        "steady pass",
        f"sustained: {f['sustainedGrants']} grants in {f['sustainedS']:.2f} s = "
        f"{f['sustainedGrants'] / f['sustainedS']:,.0f} grants/s (submit -> grant_pass -> release, batches of "
        f"{f['batch']}); of its time: " + ", ".join(f"{part} {s / f['sustainedS']:.0%}"
                                                   for part, s in f["sustainedSpentS"].items())
        + f"; the passes alone grant {f['sustainedGrants'] / f['sustainedSpentS']['pass']:,.0f}/s",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", type=int, default=50)
    parser.add_argument("--claims", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=2, help="nodes per pool")
    parser.add_argument("--devices", type=int, default=8, help="devices per node")
    parser.add_argument("--sustained-s", type=float, default=3.0, help="how long the sustained part runs")
    parser.add_argument("--out", type=Path, help="also write the figures here as JSON")
    parser.add_argument("--without-live-nodes", action="store_true",
                        help="leave every node without a live worker: the bench must stop, saying nothing was granted")
    args = parser.parse_args(argv)
    figures = run(pools=args.pools, claims=args.claims, nodes=args.nodes, devices=args.devices,
                  sustained_s=args.sustained_s, live_nodes=not args.without_live_nodes)
    print("\n".join(report(figures)))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
