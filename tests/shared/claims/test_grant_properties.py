"""Property test of the grant rules (SPEC 5): random submit / finish / cancel / pass sequences over
random pools, nodes and quotas, checked against a reference model written here from the SPEC's
words, and against the invariants the scheduler promises."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from shared.claims import wait_reasons as why
from shared.claims.grants import ClaimView, decide, plan_grants

WORKLOADS = ("a", "b", "c")


def reference_pass(nodes, held, queue, quotas):
    """The SPEC's rules, written independently: claims in queue order; one over its workload's
    quota is passed over and so are its workload's later claims; the first that fits no node
    stops the pass; a grant takes the node with the fewest free devices that fits (then by name),
    lowest device indices first."""
    free = {n: sorted(set(range(c)) - {d for (hn, devs, _w, _g) in held.values() if hn == n for d in devs})
            for n, c in nodes.items()}
    used = {}
    for (_n, _devs, wl, gpus) in held.values():
        used[wl] = used.get(wl, 0) + gpus
    stuck, grants = set(), []
    for cid, gpus, wl in queue:
        if gpus > max(nodes.values()):
            continue
        if wl in quotas and used.get(wl, 0) + gpus > quotas[wl]:
            stuck.add(wl)
            continue
        if wl in stuck:
            continue
        fits = sorted((len(free[n]), n) for n in nodes if len(free[n]) >= gpus)
        if not fits:
            break
        node = fits[0][1]
        grants.append((cid, node, tuple(free[node][:gpus])))
        free[node] = free[node][gpus:]
        used[wl] = used.get(wl, 0) + gpus
    return grants


pools = st.fixed_dictionaries({
    "nodes": st.lists(st.integers(1, 4), min_size=1, max_size=3).map(
        lambda counts: {f"n{i}": c for i, c in enumerate(counts)}),
    "quotas": st.dictionaries(st.sampled_from(WORKLOADS), st.integers(1, 6), max_size=3),
})
ops = st.lists(st.one_of(
    st.tuples(st.just("submit"), st.integers(1, 5), st.sampled_from(WORKLOADS)),
    st.tuples(st.just("finish"), st.integers(0, 50)),
    st.tuples(st.just("cancel"), st.integers(0, 50)),
    st.tuples(st.just("pass"),),
), max_size=60)


class Pool:
    def __init__(self, nodes, quotas):
        self.nodes, self.quotas = nodes, quotas
        self.queue: list[tuple[str, int, str]] = []  # waiting, in order
        self.held: dict[str, tuple[str, tuple[int, ...], str, int]] = {}
        self.seq = 0
        self.granted_ever: list[str] = []

    def submit(self, gpus, wl):
        if gpus > max(self.nodes.values()) or gpus > self.quotas.get(wl, gpus):
            return  # refused at submission: it could never be granted
        self.seq += 1
        self.queue.append((f"c{self.seq}", gpus, wl))

    def one_pass(self):
        held_views = [ClaimView(cid, g, wl, n, devs) for cid, (n, devs, wl, g) in self.held.items()]
        waiting = [ClaimView(cid, g, wl) for cid, g, wl in self.queue]
        grants = plan_grants(self.nodes, held_views, waiting, self.quotas)
        assert [(g.claim_id, g.node, g.device_indices) for g in grants] == reference_pass(
            self.nodes, self.held, self.queue, self.quotas)
        decisions = list(decide(self.nodes, held_views, waiting, self.quotas))
        self.check_order(decisions)
        by_id = {cid: (g, wl) for cid, g, wl in self.queue}
        for grant in grants:
            gpus, wl = by_id[grant.claim_id]
            assert len(grant.device_indices) == gpus  # one node per claim, all its devices there
            self.held[grant.claim_id] = (grant.node, grant.device_indices, wl, gpus)
            self.granted_ever.append(grant.claim_id)
        granted = {g.claim_id for g in grants}
        self.queue = [c for c in self.queue if c[0] not in granted]
        self.check_capacity()
        return grants

    def check_capacity(self):
        for node, count in self.nodes.items():
            devices = [d for (n, devs, _w, _g) in self.held.values() if n == node for d in devs]
            assert len(devices) == len(set(devices)), "a device held twice"
            assert all(0 <= d < count for d in devices) and len(devices) <= count, "over capacity"
        for wl, quota in self.quotas.items():
            assert sum(g for (_n, _d, w, g) in self.held.values() if w == wl) <= quota, "over quota"

    def check_order(self, decisions):
        blocked_head = False
        waiting_workloads: dict[str, str] = {}  # workload -> reason of its first waiting claim
        for d in decisions:
            if d.grant is not None:
                assert not blocked_head, "a claim after a blocked head was granted"
                assert d.claim.workload not in waiting_workloads, "a workload's claims started out of order"
                continue
            if d.reason == why.WAITING_FOR_GPUS:
                blocked_head = True
            if d.reason != why.EXCEEDS_POOL:
                waiting_workloads.setdefault(d.claim.workload, d.reason)
        # order across workloads is kept except where the earlier claim waits on its quota
        reasons = [d.reason for d in decisions]
        for i, d in enumerate(decisions):
            if d.grant is not None:
                assert all(r in (why.QUOTA, why.EXCEEDS_POOL) or (r == why.QUEUED_BEHIND and not blocked_before(
                    decisions, j)) for j, r in enumerate(reasons[:i]) if r is not None)


def blocked_before(decisions, j):
    return any(d.reason == why.WAITING_FOR_GPUS for d in decisions[:j])


@settings(max_examples=300, deadline=None)
@given(pools, ops)
def test_random_sequences_keep_every_promise(pool_spec, operations):
    pool = Pool(pool_spec["nodes"], pool_spec["quotas"])
    for op in operations:
        if op[0] == "submit":
            pool.submit(op[1], op[2])
        elif op[0] == "finish" and pool.held:
            del pool.held[sorted(pool.held)[op[1] % len(pool.held)]]
        elif op[0] == "cancel" and pool.queue:
            del pool.queue[op[1] % len(pool.queue)]
        else:
            pool.one_pass()
    # capacity frees: finish everything after each pass; every claim that could ever fit is granted
    waiting_now = [cid for cid, _g, _w in pool.queue]
    for _ in range(len(pool.queue) + 1):
        pool.one_pass()
        pool.held.clear()
        if not pool.queue:
            break
    assert pool.queue == []
    assert set(waiting_now) <= set(pool.granted_ever)
    assert len(pool.granted_ever) == len(set(pool.granted_ever)), "a claim granted twice"
