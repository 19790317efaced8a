"""Every sentence a user can see, in one place.

SPEC.md quotes some of these word for word and scripts match them verbatim, so each one is a
constant or a small formatter here and nowhere else. Tests check them letter for letter.
"""

from __future__ import annotations

import signal


def engine_refused(*, method: str, kl_penalty: float, restores_weights: bool, gpus: int) -> str:
    """SPEC 3.1: the resolver found no engine for what the run asked for."""
    sentence = f"this deployment does not train {method}"
    if kl_penalty > 0:
        sentence += " with a KL penalty"
    if restores_weights:
        sentence += " over an inherited adapter"
    return sentence + f" on {gpus} GPU(s)"


def training_state_gpu_mismatch(*, saved_gpus: int, run_gpus: int) -> str:
    """SPEC 3.3: a trainingState restore on another GPU count."""
    return (
        f"this snapshot's training state was saved across {saved_gpus} GPU(s), "
        f"and this run trains on {run_gpus}. Restore its weights instead"
    )


TRAINING_STATE_UNREADABLE = (
    "this snapshot's training state is in a layout this deployment cannot read as a branch source. "
    "Restore its weights instead"
)
WEIGHTS_UNREADABLE = "this snapshot's weights are in a layout this deployment cannot read as a branch source"


def comparison_weights_unreadable(snapshot_id: str) -> str:
    return (
        f"branch comparisons cannot evaluate snapshot {snapshot_id} yet: "
        "its weights are in a layout a comparison does not load"
    )


def endpoint_stopped_before_request(endpoint_id: str) -> str:
    return f"endpoint {endpoint_id} was stopped before this request reached it"


# --- Plans that can never fit (SPEC 3.1, 5): refused at submission, each with its own sentence.

def gpus_exceed_every_node(*, gpus: int, pool: str, largest_node_gpus: int, kind: str = "run") -> str:
    return (
        f"this {kind} asks for {gpus} GPU(s) of one node, and the largest node of pool {pool} "
        f"has {largest_node_gpus}"
    )


def gpus_exceed_quota(*, gpus: int, workload: str, pool: str, quota_gpus: int, kind: str = "run") -> str:
    return (
        f"this {kind} asks for {gpus} GPU(s), and workload {workload} may hold at most "
        f"{quota_gpus} GPU(s) in pool {pool}"
    )


def precision_unsupported(*, precision: str, model: str, supported: list[str]) -> str:
    return (
        f"model {model} does not train in {precision} here; it supports "
        + ", ".join(supported)
    )


# --- Detail sentences stored on resources that stopped or failed.

CANCELLED_BY_USER = "cancelled by the user"
CANCELLED_WHILE_QUEUED = "cancelled by the user before it was granted GPUs"


def run_failed(error: str) -> str:
    return f"training failed: {error}"


# --- Branches (SPEC 3.3): sentences of our own beside the SPEC's.

def snapshot_has_no_training_state(snapshot_id: str) -> str:
    return f"snapshot {snapshot_id} holds no training state. Restore its weights instead"


def branch_changes(*, what: str, parent: str, plan: str) -> str:
    """A trainingState branch must train the way its parent did (method, engine, precision)."""
    return (
        f"a trainingState branch trains the way its parent did, and this plan changes its {what} "
        f"from {parent} to {plan}. Restore its weights instead"
    )


def branch_other_model(*, snapshot_id: str, snapshot_model: str, plan_model: str) -> str:
    return f"snapshot {snapshot_id} holds an adapter of {snapshot_model}, and this plan trains {plan_model}"


# --- Pause and resume.

def cannot_pause(run_id: str, status: str) -> str:
    return f"run {run_id} is {status}; only a STARTING or RUNNING run can be paused"


def cannot_resume(run_id: str, status: str) -> str:
    return f"run {run_id} is {status}; only a PAUSED run can be resumed"


# --- What a waiting claim waits on (SPEC 5). Entries are those of services/scheduler/waiting.py.

WAIT_TEXT_MAX_ENTRIES = 10  # per part; the JSON lists stay complete


def idle_text(seconds: int | float) -> str:
    """`45s`, `42m`, or `1h05m`."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"


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
    if scheduling.get("reason") == "no_live_worker":
        parts.append(NO_LIVE_WORKER)
    on = waiting_on(scheduling.get("waitingOn"))
    return "; ".join(p for p in (*parts, on) if p)


NO_LIVE_WORKER = "no worker is running on a node of its pool that could hold it"


def granted(*, gpus: int, node: str, devices: list[str]) -> str:
    """The event a resource gets when its claim is granted."""
    return f"granted {gpus} GPU(s) on node {node} ({', '.join(devices)})"


def worker_lost_requeued(node: str) -> str:
    """The warn event of a run whose worker stopped renewing its lease."""
    return f"worker lost on node {node}; re-queued keeping its place"


def worker_lost_cancelled(node: str) -> str:
    """Detail of a cancel-requested run whose worker was lost before it stopped the run."""
    return f"cancelled by the user; its worker on node {node} was lost before it stopped"


def inherited_adapter_config_used(differences: str) -> str:
    """A weights branch whose plan sets other adapter settings than the adapter it inherits."""
    return (
        f"the plan's adapter settings differ from the inherited adapter's ({differences}): "
        "training uses the inherited adapter's config"
    )


def rank_failed(*, rank: int, world: int, how: str) -> str:
    """SPEC 3.2: one process of a multi-GPU run failed; `how` is e.g. "was killed by SIGKILL"."""
    return f"rank {rank} of {world} {how}; the other ranks were stopped"


def memory_exceeded(*, model: str, needs_gib: float, precision: str, pool: str, has_gib: float,
                    uniform: bool = True) -> str:
    """SPEC 3.1: the resolver's estimate of what training needs per GPU is more than the nodes have."""
    return (
        f"model {model} needs about {needs_gib:.1f} GiB per GPU to train in {precision} with this adapter, "
        f"and the nodes of pool {pool} have {'' if uniform else 'at most '}{has_gib:.1f} GiB per GPU"
    )


# --- Endpoints as the API sees them.

def endpoint_not_ready(endpoint_id: str, phase: str) -> str:
    """A request through the trainer to an endpoint that is not READY is refused with its phase."""
    return f"endpoint {endpoint_id} is {phase}; it answers requests once READY"


def endpoint_name_taken(name: str, endpoint_id: str, phase: str) -> str:
    return f"endpoint name {name} is taken by {endpoint_id} ({phase})"


def endpoint_unknown(model: str) -> str:
    return f"no endpoint has the id or name {model}; `training endpoints get` lists them"


ENDPOINT_STOPPED_BY_USER = "stopped by the user"
ENDPOINT_PROCESS_UNREACHABLE = "the endpoint's serving process did not answer"


# --- Endpoints as the endpoint manager moves them (services/endpoint_manager).

ENDPOINT_PROCESS_LOST = "serving process lost; starting it again"


def endpoint_ready(address: str) -> str:
    """The event of an endpoint whose serving process answered its first probe."""
    return f"ready at {address}"


def endpoint_process_started(*, pid: int, port: int, backend: str) -> str:
    return f"serving process started on port {port} (pid {pid}, backend {backend})"


def endpoint_start_timed_out(start_timeout_s: int | float) -> str:
    """Detail of an endpoint that was STARTING for longer than its startTimeout."""
    return f"did not become ready within {int(start_timeout_s)}s; see its log"


def endpoint_process_ended(exit_code: int) -> str:
    """Detail of an endpoint whose serving process ended before it answered."""
    if exit_code < 0:
        try:
            how = f"was killed by {signal.Signals(-exit_code).name}"
        except ValueError:
            how = f"was killed by signal {-exit_code}"
    else:
        how = f"exited with code {exit_code}"
    return f"its serving process {how} before it was ready; see its log"


def endpoint_could_not_start(error: str) -> str:
    return f"could not start its serving process: {error}"


def endpoint_idle_stopped(idle_timeout_s: int | float) -> str:
    """Detail of an endpoint stopped by its idleTimeout (SPEC 6): `stopped after 1h00m without a request`."""
    return f"stopped after {idle_text(idle_timeout_s)} without a request"
