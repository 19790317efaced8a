"""What a waiting claim waits on (SPEC 5; its entries are those of shared/claims/waiting.py), the
event of a grant, and the cap on what one workload may queue. `service` is how a node's service is
named to users: "worker" or "endpoint manager"."""

from __future__ import annotations

from shared.reasons.phrases import idle_text


WAIT_TEXT_MAX_ENTRIES = 10  # per part; the JSON lists stay complete


def wait_entry(entry: dict) -> str:
    """`run R (4 GPU)`, `endpoint E (Qwen/Qwen3-8B, idle 42m)`; an entry of a workload the reader
    may not see (id None): `run of another workload (4 GPU)`."""
    kind, ident, gpus = entry.get("kind", "claim"), entry.get("id"), entry.get("gpus", "?")
    if ident is None:
        return f"{kind} of another workload ({gpus} GPU)"
    if kind == "endpoint":
        idle = entry.get("idleSeconds")
        detail = f"idle {idle_text(idle)}" if idle is not None else f"{gpus} GPU"
        return f"endpoint {ident} ({entry.get('model') or '?'}, {detail})"
    return f"{kind} {ident} ({gpus} GPU)"


def waiting_on(waiting: dict | None) -> str:
    """`held by endpoint E (Qwen/Qwen3-8B, idle 42m); queued ahead: run R (4 GPU)`; a part with no
    entries is left out."""
    parts = []
    for label, key in (("held by", "heldBy"), ("queued ahead:", "queuedAhead")):
        entries = list((waiting or {}).get(key) or [])
        if entries:
            text = ", ".join(wait_entry(e) for e in entries[:WAIT_TEXT_MAX_ENTRIES])
            if len(entries) > WAIT_TEXT_MAX_ENTRIES:
                text += f", and {len(entries) - WAIT_TEXT_MAX_ENTRIES} more"
            parts.append(f"{label} {text}")
    return "; ".join(parts)


def quota_wait(*, workload: str, held_gpus: int, quota_gpus: int, pool: str) -> str:
    """The sentence of a claim its workload's quota blocks."""
    return f"quota: workload {workload} holds {held_gpus} of its {quota_gpus} GPU(s) in pool {pool}"


def waiting_text(scheduling: dict | None) -> str:
    """The whole line for a waiting claim (`scheduling` with reason, quota, waitingOn): the quota
    sentence first when a quota holds it, then what holds the pool and what is queued ahead."""
    scheduling = scheduling or {}
    quota = scheduling.get("quota")
    parts = []
    if scheduling.get("reason") == "quota" and quota:
        parts.append(quota_wait(workload=quota["workload"], held_gpus=quota["held"],
                                quota_gpus=quota["gpus"], pool=quota["pool"]))
    down = list((scheduling.get("waitingOn") or {}).get("notAnswering") or [])
    parts += [node_not_answering_wait(d["node"], free_gpus=d.get("freeGpus") or 0, service=d.get("service") or "worker")
              for d in down]
    if scheduling.get("reason") == "no_live_worker" and not down:
        parts.append(NO_LIVE_WORKER)
    on = waiting_on(scheduling.get("waitingOn"))
    return "; ".join(p for p in (*parts, on) if p)


# A claim queued with a GPU count that is not a whole number of at least 1 (shared/claims/queue.py;
# the API's schemas refuse one before it gets there).
CLAIM_GPUS_NOT_WHOLE = "execution.gpus must be a whole number of at least 1"


def claim_exists(kind: str, resource_id: str, claim_id: str, state: str) -> str:
    """A claim submitted for a resource that already holds a live one."""
    return f"{kind} {resource_id} already has claim {claim_id} ({state})"


def pool_unknown(pool: str) -> str:
    """A request naming a pool the deployment config does not declare (shared/claims/fits.py: 404)."""
    return f"pool {pool} does not exist in this deployment"


NO_LIVE_WORKER = "no worker is running on a node of its pool that could hold it"


def device_count(count: int, kind: str = "cuda") -> str:
    """`N GPU(s)`, or `N CPU slot(s)` where the devices are a CPU node's training slots (SPEC 1)."""
    return f"{count} CPU slot(s)" if kind == "cpu" else f"{count} GPU(s)"


def granted(*, gpus: int, node: str, devices: list[str]) -> str:
    """The event a resource gets when its claim is granted; CPU slots (`cpu:N`) are called slots."""
    kind = "cpu" if devices and all(str(d).startswith("cpu") for d in devices) else "cuda"
    return f"granted {device_count(gpus, kind)} on node {node} ({', '.join(devices)})"


def claim_queued(*, pool: str, gpus: int, device_kind: str = "cuda") -> str:
    """An evaluation's or an endpoint's first event."""
    return f"queued in pool {pool} for {device_count(gpus, device_kind)}"


def queued_claims_cap(*, workload: str, cap: int, queued: int, asked: int) -> str:
    """A submission that would queue more claims for a workload than the deployment's
    scheduling.maxQueuedPerWorkload allows (shared/claims/queue.py)."""
    return (f"workload {workload} has {queued} run(s), evaluation(s) and endpoint(s) queued for GPUs, and this "
            f"would queue {asked} more; this deployment lets one workload queue {cap} at most. Wait for some to "
            "start, or cancel some")


def node_not_answering_wait(node: str, *, free_gpus: int, service: str) -> str:
    """What a waiting claim says of a node big enough for it whose service does not answer
    (`waitingOn.notAnswering`, shared/claims/waiting.py): nothing is granted there."""
    if free_gpus:
        return f"node {node} has {free_gpus} free GPU{'' if free_gpus == 1 else 's'} but its {service} is not answering"
    return f"node {node}'s {service} is not answering"
