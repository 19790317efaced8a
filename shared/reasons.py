"""Every sentence a user can see, in one place.

SPEC.md quotes some of these word for word and scripts match them verbatim, so each one is a
constant or a small formatter here and nowhere else. Tests check them letter for letter.
"""

from __future__ import annotations

import json
import signal


def engine_refused(*, method: str, kl_penalty: float, restores_weights: bool, gpus: int) -> str:
    """SPEC 3.1: the resolver found no engine for what the run asked for."""
    sentence = f"this deployment does not train {method}"
    if kl_penalty > 0:
        sentence += " with a KL penalty"
    if restores_weights:
        sentence += " over an inherited adapter"
    return sentence + f" on {gpus} GPU(s)"


# How a sentence names the rows of each dataset format (shared/datasets.py FORMATS).
DATASET_FORMAT_ROWS = {"chat": "chat messages", "completion": "prompt and completion rows", "prompt": "prompt rows"}


def dataset_format_refused(*, dataset: str, dataset_format: str, method: str, trains_on: list[str]) -> str:
    """SPEC 3.1: no engine of the run's method declares the format of its dataset's rows;
    `trains_on` is the formats they declare, in FORMATS order."""
    named = [DATASET_FORMAT_ROWS.get(f, f"{f} rows") for f in trains_on]
    if not named:
        listed = "no dataset rows in this deployment"
    else:
        listed = named[-1] if len(named) == 1 else ", ".join(named[:-1]) + " or " + named[-1]
    return f"dataset {dataset} holds {dataset_format} rows; {method} trains on {listed}"


def dataset_modality_refused(*, dataset: str, model: str, dataset_modality: str, evaluated: bool = False) -> str:
    """SPEC 3.1 (issue 17): a dataset with images for a text model, or one without for an
    image-text model; said of a run, or (`evaluated`) of an evaluation."""
    if dataset_modality == "image-text":
        return f"dataset {dataset} holds images, and model {model} is a text model that cannot read them"
    uses = "is evaluated on" if evaluated else "trains on"
    return (f"dataset {dataset} holds no images, and model {model} is an image-text model "
            f"that {uses} rows with images")


def image_row_too_long(*, line: int | None, tokens: int, max_length: int) -> str:
    """Issue 17: an SFT row with images longer than maxSeqLength (such a row is never cut)."""
    return (f"dataset line {line}: the row is {tokens} tokens with its images, longer than maxSeqLength "
            f"{max_length}; a row with images is never cut, since an image would lose its tokens")


def request_part_refused(where: str, problem: str) -> str:
    """Issue 17: a chat request's content part an image-text model cannot read, e.g.
    `messages[0].content[1].image_url.url is not valid base64`."""
    return f"{where} {problem}"


def image_file_unknown(name: str, uploaded: list[str]) -> str:
    """Issue 17: an image part naming a file the upload does not hold (`uploaded`: the names it holds)."""
    held = ", ".join(uploaded[:5]) + (f" and {len(uploaded) - 5} more" if len(uploaded) > 5 else "")
    return f"names image file {name}, which was not uploaded with the rows" + (f" (uploaded: {held})" if held else "")


def image_file_refused(name: str, problem: str) -> str:
    """Issue 17: an image part naming an uploaded file that is not an image a row may hold."""
    return f"names image file {name}, which {problem}"


def image_files_unnamed(names: list[str]) -> str:
    listed = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return f"image files no row names: {listed}; a row names a file by its name as an image part's url"


def image_files_too_many(count: int, most: int) -> str:
    return f"the upload holds {count} image files; the most is {most}"


def image_file_name_refused(name: str, most: int) -> str:
    return (f"image file name {json.dumps(name[:most + 1])} is refused: a name is 1 to {most} characters "
            "and does not start with `data:`")


def image_file_twice(name: str) -> str:
    return f"two image files are named {name}; each file needs a name of its own"


def dataset_with_images_too_large(size: int, most: int) -> str:
    return f"the rows with their images written in are {size} bytes; the most is {most}"


IMAGE_ROWS_ARE_CHAT = "rows with images train as chat messages; this dataset's rows are prompt and completion rows"
IMAGE_ROWS_NOT_PACKED = "packing does not take rows with images; train this dataset with packing off"


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


# --- What a waiting claim waits on (SPEC 5). Entries are those of shared/claims/waiting.py.

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
    down = list((scheduling.get("waitingOn") or {}).get("notAnswering") or [])
    parts += [node_not_answering_wait(d["node"], free_gpus=d.get("freeGpus") or 0, service=d.get("service") or "worker")
              for d in down]
    if scheduling.get("reason") == "no_live_worker" and not down:
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


def worker_restarted_requeued(node: str) -> str:
    """The warn event of a run (or evaluation) its node's worker found orphaned when it started
    again (services/trainer_worker/reclaim.py): the worker that held it died with it."""
    return f"worker restarted on node {node}; re-queued keeping its place"


def worker_restarted_cancelled(node: str) -> str:
    """Detail of a cancel-requested run whose node's worker restarted before it stopped the run."""
    return f"cancelled by the user; its worker on node {node} restarted before it stopped"


# --- Issue 26: a worker asked to stop gives its work back; a task finds the process before it gone
# (services/trainer_worker/stopping.py, takeover.py).

def worker_stopping(grace_s: float) -> str:
    """The event of a run whose worker was asked to stop (SIGTERM: `training down`, docker compose
    stop or restart, systemd) while it trained: it saves at its next step boundary first."""
    return (f"its worker is stopping: writing a snapshot at the next step boundary (waiting at most {grace_s:g} s), "
            "then re-queueing the run")


def worker_stopped_requeued(node: str) -> str:
    """The warn event of a run or evaluation its worker gave back because the worker was stopped."""
    return f"worker on node {node} stopped; re-queued keeping its place"


def worker_stopped_cancelled(node: str) -> str:
    """Detail of a cancel-requested run or evaluation whose worker was stopped before it ended it."""
    return f"cancelled by the user; its worker on node {node} stopped before it did"


def worker_stopped_unsaved(grace_s: float) -> str:
    """The warn event of a run whose worker stopped before a step boundary came within the grace."""
    return (f"no step boundary came within {grace_s:g} s of the worker's stop: re-queued without a new snapshot, "
            "it resumes from its latest one")


def process_lost_requeued(kind: str, node: str, lost: int, limit: int) -> str:
    """The warn event of a run or evaluation whose process died under a live worker (killed from
    outside: the kernel's out-of-memory killer, a signal), found by the task delivered again."""
    return (f"the process that ran this {kind} on node {node} died (killed from outside it, for example by the "
            f"out-of-memory killer); re-queued keeping its place (loss {lost} of {limit} before it fails)")


def process_lost_cancelled(kind: str, node: str) -> str:
    """Detail of a cancel-requested run or evaluation whose process died before it ended it."""
    return f"cancelled by the user; the process that ran this {kind} on node {node} died before it stopped"


def process_lost_failed(kind: str, node: str, lost: int, *, since_snapshot: bool) -> str:
    """Detail of a run or evaluation whose process kept dying: failed instead of started again."""
    between = " with no new snapshot between them" if since_snapshot else ""
    return (f"the process that ran this {kind} on node {node} died {lost} times{between} (killed from outside it, "
            "for example by the out-of-memory killer); failed instead of started again")


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



def activation_checkpointing_chosen(*, on: bool, needs_gib: float, gpu_gib: float, share: float) -> str:
    """An sft run on CUDA says whether it recomputes activations (engines/kit.py
    `activation_checkpointing`): off when the memory estimate without it fits `share` of the GPU."""
    verb = "exceeds" if on else "fits in"
    return (f"activation checkpointing {'on' if on else 'off'}: the memory estimate without it, {needs_gib:.1f} GiB, "
            f"{verb} {share:.0%} of the GPU's {gpu_gib:.1f} GiB")


# --- Endpoints as the API sees them.


def endpoint_not_ready(endpoint_id: str, phase: str) -> str:
    """A request through the trainer to an endpoint that is not READY is refused with its phase."""
    return f"endpoint {endpoint_id} is {phase}; it answers requests once READY"


def endpoint_ended(endpoint_id: str, phase: str, detail: str | None) -> str:
    """A request through the trainer to an endpoint that has ended (TERMINATED, FAILED): refused
    with its phase and why, since it will never be READY again."""
    why = f" ({detail})" if detail else ""
    return (f"endpoint {endpoint_id} is {phase}{why} and answers no more requests; "
            "`training endpoints create` starts a new one")


def endpoint_name_taken(name: str, endpoint_id: str, phase: str) -> str:
    return f"endpoint name {name} is taken by {endpoint_id} ({phase})"


# A request to a serving process's port without its secret (shared/serving/openai_app.py): only the
# trainer's proxy and the work that started the process hold it.
SERVING_KEY_REQUIRED = "this serving process answers only requests that carry its key; send them through the trainer"


def adapter_not_foldable(name: str, why: str) -> str:
    """A serving process in adapterMode folded (a rollout server) was handed an adapter it cannot
    fold into its weights exactly (shared/serving/adapter_fold.py)."""
    return f"adapter {name} cannot be folded into this server's weights: {why}; serve it with adapterMode unmerged"


def folded_server_serves_only(folded: str, asked: str) -> str:
    """A request for the base model to a serving process that has an adapter folded into its weights."""
    return f"this server has adapter {folded} folded into its weights, so it answers for {folded} only, not {asked}"


def folded_spec_adapters(count: int) -> str:
    """A load spec in adapterMode folded that names more than one adapter."""
    return f"load spec: adapterMode folded serves one adapter at a time, and {count} are named"


def weak_tokens_refused(names: list[str], min_length: int) -> str:
    """The API's refusal to start (services/api/main.py) with a token anyone could guess."""
    return (f"refusing to start: the token(s) {', '.join(names)} are empty, a placeholder such as change-me, or "
            f"shorter than {min_length} characters; set TRAINING_ADMIN_TOKEN (and the config's tokens) to long "
            "random values, e.g. `python3 -c 'import secrets; print(secrets.token_urlsafe(32))'`")


def endpoint_name_ambiguous(name: str, workloads: list[str]) -> str:
    """A name used by live endpoints of several workloads this token may use (names are per workload)."""
    return (f"endpoint name {name} names live endpoints of workloads {', '.join(workloads)}; "
            "use the endpoint's id")


def endpoint_unknown(model: str) -> str:
    return f"no endpoint has the id or name {model}; `training endpoints get` lists them"


def route_unknown(method: str, path: str) -> str:
    return f"{method} {path} is not part of this API"


INTERNAL_ERROR = "the trainer hit an internal error; see the API log"
# A 503 while Redis is down or restarting (shared/errors.StoreUnavailable, docs/faults.md).
STORE_UNREACHABLE = ("the trainer cannot reach its store (Redis) right now; it reconnects by itself, "
                     "so send the request again in a few seconds")
REQUEST_BODY_NOT_JSON_OBJECT = "the request body must be a JSON object (Content-Type: application/json)"


def request_too_large(max_bytes: int) -> str:
    return f"the upload is larger than this deployment accepts ({max_bytes} bytes)"


ENDPOINT_STOPPED_BY_USER = "stopped by the user"
ENDPOINT_PROCESS_UNREACHABLE = "the endpoint's serving process did not answer"
# The warn event of an endpoint whose serving process refused or dropped a proxied request's
# connection: the proxy sent it back to STARTING (shared/lifecycle/endpoints.process_gone).
ENDPOINT_PROCESS_GONE = ("a request found its serving process gone (connection refused or reset); "
                         "STARTING until the endpoint manager sees it answer or starts another")


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


def how_it_ended(exit_code: int) -> str:
    """How a process ended, from its return code: `exited with code 3`, `was killed by SIGKILL`."""
    if exit_code < 0:
        try:
            return f"was killed by {signal.Signals(-exit_code).name}"
        except ValueError:
            return f"was killed by signal {-exit_code}"
    return f"exited with code {exit_code}"


def endpoint_process_ended(exit_code: int) -> str:
    """Detail of an endpoint whose serving process ended before it answered."""
    return f"its serving process {how_it_ended(exit_code)} before it was ready; see its log"


# --- The local stack's supervisor (training_cli/supervisor.py): its log lines and `training status`.


def service_restarting(name: str, exit_code: int, *, delay_s: float, restart: int) -> str:
    """A service of the local stack ended; the supervisor starts it again after `delay_s`."""
    return f"{name} {how_it_ended(exit_code)}; starting it again in {delay_s:g}s (restart {restart})"


def service_started(name: str, pid: int, restart: int) -> str:
    return f"{name} started (pid {pid})" if restart == 0 else f"{name} started again (pid {pid}, restart {restart})"


def service_could_not_start(name: str, error: str, delay_s: float) -> str:
    return f"{name} could not be started ({error}); trying again in {delay_s:g}s"


SUPERVISOR_STOPPING = "stopping the local stack: the services first, then its Redis"


def service_did_not_stop(name: str, pid: int, grace_s: float) -> str:
    return f"{name} (pid {pid}) did not stop within {grace_s:g}s; killed it"


def endpoint_could_not_start(error: str) -> str:
    return f"could not start its serving process: {error}"


def endpoint_idle_stopped(idle_timeout_s: int | float) -> str:
    """Detail of an endpoint stopped by its idleTimeout (SPEC 6): `stopped after 1h00m without a request`."""
    return f"stopped after {idle_text(idle_timeout_s)} without a request"


# --- Evaluations and branch comparisons (SPEC 2.5; services/api/evaluations.py, comparisons.py,
# services/trainer_worker/evaluation_job.py).


def evaluation_snapshot_unreadable(snapshot_id: str) -> str:
    """An evaluation of a snapshot whose adapter weights this deployment cannot load."""
    return f"snapshot {snapshot_id}'s weights are in a layout this deployment cannot load for an evaluation"


def evaluation_other_model(*, snapshot_id: str, snapshot_model: str, model: str) -> str:
    return f"snapshot {snapshot_id} holds an adapter of {snapshot_model}, and this evaluation scores {model}"


def evaluation_judge_unknown(judge: str) -> str:
    return f"judge {judge} is not an endpoint of this deployment; `training endpoints get` lists them"


def evaluation_judge_ended(judge: str, phase: str) -> str:
    return f"judge endpoint {judge} is {phase}; start another endpoint to judge with"


def evaluation_waits_for_judge(judge: str, phase: str, wait_s: float) -> str:
    """Event of an evaluation whose judge endpoint is not READY yet when scoring would begin."""
    return f"waiting up to {wait_s:.0f}s for judge endpoint {judge} ({phase}) to be READY"


def evaluation_judge_not_ready(judge: str, phase: str) -> str:
    """Detail of an evaluation whose judge was not answering when its scoring began."""
    return f"judge endpoint {judge} is {phase}; an evaluation scores with a judge only while it is READY"


def evaluation_judge_unparsable(count: int, judge: str) -> str:
    """The warn event of an evaluation whose judge answered some rows with no number."""
    return f"judge endpoint {judge} answered {count} row(s) with no score; those rows have no judge score"


def evaluation_failed(error: str) -> str:
    return f"evaluation failed: {error}"


def evaluation_rows_not_ready(evaluation_id: str, status: str) -> str:
    return f"evaluation {evaluation_id} is {status}; its per-row results exist once it has SUCCEEDED"


def evaluation_ended(evaluation_id: str, status: str) -> str:
    return f"evaluation {evaluation_id} has already ended ({status})"


def comparison_ended(comparison_id: str, status: str) -> str:
    return f"comparison {comparison_id} has already ended ({status})"


def evaluation_succeeded(rows: int, loss: float | None) -> str:
    return f"scored {rows} row(s)" + (f": loss {loss:.4f}" if loss is not None else "")


def comparison_other_models(models: dict[str, str]) -> str:
    """A comparison whose snapshots hold adapters of different base models."""
    listed = ", ".join(f"{snapshot} ({model})" for snapshot, model in models.items())
    return f"a comparison scores snapshots of one base model, and these hold adapters of several: {listed}"


def evaluated_snapshot_unknown(snapshot_id: str) -> str:
    return f"snapshot {snapshot_id} does not exist"


# --- Endpoints of a node whose endpoint manager is gone (services/scheduler/lost_endpoints.py).


def endpoint_manager_lost(node: str) -> str:
    """Event of a READY or STARTING endpoint whose node has had no endpoint manager for too long."""
    return f"no endpoint manager runs on node {node}; its serving process is presumed lost until one is back"


def endpoint_start_timed_out_without_manager(start_timeout_s: int | float, node: str) -> str:
    """Detail of an endpoint whose start timeout passed while its node had no endpoint manager."""
    return f"did not become ready within {int(start_timeout_s)}s: no endpoint manager ran on node {node}"


# --- Reinforcement runs (GRPO, SPEC 4): services/trainer_worker/engines/grpo*.py, services/api/runs.py.


def grpo_judge_unparsable(judge: str, count: int, step: int) -> str:
    """Warn event of a GRPO step in which a judge answered some completions with no number."""
    return f"judge endpoint {judge} answered {count} completion(s) of step {step} with no score in 0..10; they score 0"


def grpo_judge_unreachable(judge: str, waited_s: float, problem: str) -> str:
    """A GRPO run's judge did not answer for a while: the run fails with this (inside run_failed)."""
    return f"judge endpoint {judge} did not answer for {waited_s:g}s ({problem}); the run cannot score its completions"


GRPO_NEEDS_REWARDS = "a grpo run needs at least one reward in grpo.rewards"


def grpo_batch_not_a_multiple(*, batch_size: int, generations: int) -> str:
    """hyperparameters.batchSize counts completions per step: whole groups of numGenerations."""
    return (f"batchSize {batch_size} is not a multiple of grpo.numGenerations {generations}; a grpo step trains "
            "on whole groups of completions of one prompt")


def batch_not_split(*, batch_size: int, gpus: int, accumulation: int) -> str:
    """SPEC 3.2: batchSize is the global batch whatever the GPU count, so it must split evenly over
    the run's GPUs and micro-batches (for a grpo run: its completions per step)."""
    return (f"batchSize {batch_size} does not split evenly over {gpus} GPU(s) x gradientAccumulation {accumulation}; "
            "batchSize is the global batch, the same on any GPU count, so it must be a multiple of their product")


GRPO_NO_VALIDATION = "a grpo run scores no validationDataset yet; its metrics carry the reward of every step"


def grpo_on_sft_run(method: str) -> str:
    return f"grpo settings apply to grpo runs, and this run's method is {method}"


def endpoint_log_missing(endpoint_id: str, phase: str) -> str:
    """GET /v1/endpoints/ID/logs before its serving process was ever started (or after its log went)."""
    return f"endpoint {endpoint_id} has no serving log ({phase}); its log starts with its serving process"


# --- Catalog models from the Hugging Face hub cache (SPEC 1, 2.1): shared/models.py, shared/catalog.py.


def hub_model_not_cached(*, model: str, revision: str, cache_dir: str) -> str:
    """A catalog entry with neither `builtin` nor `path` whose snapshot is not in the local hub cache:
    refused at submission (API) and, should a node's cache differ, when the worker loads it."""
    revision_flag = "" if revision == "main" else f" --revision {revision}"
    return (f"model {model} (revision {revision}) is not in the Hugging Face hub cache at {cache_dir}, "
            f"and the trainer never downloads models; download it into that cache first: "
            f"hf download {model}{revision_flag} --cache-dir {cache_dir}")


def hub_model_id_invalid(model: str) -> str:
    """A hub-cache catalog entry whose id cannot be a Hugging Face repo id (e.g. two slashes)."""
    return (f"catalog entry {model} names neither a built-in model nor a local path, and {model} is not a "
            "Hugging Face repo id (ORG/NAME) to find in the hub cache")


# --- Snapshot manifests, adapters and comparisons: refusals that leave nothing behind.


def manifest_field_invalid(manifest_path: str, field: str, must: str, value: object) -> str:
    """An imported snapshot's manifest holds a field of the wrong type or value (`must` says what it
    must be, e.g. "a JSON object or null")."""
    if isinstance(value, dict):
        got = "a JSON object"
    elif isinstance(value, list):
        got = "a list"
    elif isinstance(value, str):
        got = f"the string {json.dumps(value if len(value) <= 60 else value[:57] + '...')}"
    else:
        got = json.dumps(value)  # null, true, false or a number
    return f"{manifest_path}: {field} must be {must}, not {got}"


def snapshot_has_no_weights(snapshot_id: str) -> str:
    """GET /v1/snapshots/ID/adapter on a snapshot whose manifest lists no weights."""
    return f"snapshot {snapshot_id} holds no weights (its manifest lists none), so it has no adapter to download"


def comparison_not_queued(comparison_id: str) -> str:
    """An evaluation withdrawn because its comparison failed to queue the rest of its evaluations."""
    return f"withdrawn: comparison {comparison_id} could not queue all of its evaluations, so it queued none"


# --- Lists: ?status= and ?after= (services/api/paging.py, shared/store.py).


def status_unknown(what: str, status: str, known: list[str]) -> str:
    return f"status {status} is not a state of {what}; they are {', '.join(known)}"


def list_has_no_status(what: str) -> str:
    return f"{what} have no status to filter by; drop ?status="


def cursor_unknown(cursor: str) -> str:
    """?after= names no item of the list: a cursor is the nextCursor a page of this list gave."""
    return f"after={cursor} is not a cursor of this list; pass the nextCursor of the page before"


# --- Reward parameters: a reward entry's keys beside function, judge and weight (shared/rewards.py).


def reward_parameter_unknown(where: str, function: str, parameter: str, takes: list[str]) -> str:
    """A reward entry gives its function a parameter the function does not take (a built-in one's
    list, or a registered one's signature); `where` is the entry, e.g. grpo.rewards.0."""
    if not takes:
        return (f"{where}.{parameter}: reward function {function} takes no parameter {parameter}; "
                "it takes none beside the completion and the row")
    return (f"{where}.{parameter}: reward function {function} takes no parameter {parameter}; "
            f"it takes {', '.join(takes)}")


def reward_parameter_missing(where: str, function: str, parameter: str) -> str:
    """A registered reward function's signature has a parameter with no default that the entry omits."""
    return f"{where}.{parameter}: reward function {function} needs the parameter {parameter} (it has no default)"


def reward_parameter_type(where: str, function: str, parameter: str, must: str, value: object) -> str:
    """A built-in reward function's parameter of the wrong type (`must` says what it must be)."""
    shown = json.dumps(value, default=str)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"{where}.{parameter}: reward function {function} takes {parameter} as {must}, not {shown}"


def reward_judge_parameter(where: str, parameter: str) -> str:
    """A judge reward entry carries a key beside judge and weight."""
    return (f"{where}.{parameter}: a judge reward has only judge and weight; its endpoint's answer is "
            "the score, asked with no parameters")


def reward_parameter_not_json(value: object) -> str:
    """A reward parameter that is not a JSON value (the plan stores it); the schema prefixes the field."""
    got = repr(value) if isinstance(value, float) else f"a value of type {type(value).__name__}"  # nan, inf too
    return (f"must be a JSON value (a string, number, true, false, null, list or object), not {got}; "
            "reward parameters are stored in the plan")


# --- Snapshot archives (`training snapshots import`, services/api/snapshot_import.py).


def snapshot_archive_unreadable(filename: str, error: str) -> str:
    return f"{filename} is not a readable .tar or .tar.gz of a snapshot directory ({error})"


def snapshot_archive_unsafe(filename: str, error: str) -> str:
    """A member that would land outside the snapshot directory, a link out of it, a device file."""
    return f"{filename} holds a member the trainer will not unpack ({error}); a snapshot archive holds plain files"


def snapshot_archive_no_manifest(filename: str) -> str:
    return (f"{filename} holds no snapshot.json at its top or in its one top-level directory; "
            "a snapshot directory starts with its manifest")


def snapshot_archive_too_large_unpacked(filename: str, limit_bytes: int) -> str:
    return f"{filename} unpacks to more than this deployment accepts ({limit_bytes} bytes unpacked)"


def snapshot_archive_too_many_files(filename: str, limit: int) -> str:
    return f"{filename} holds more files than a snapshot directory may ({limit})"


def snapshot_damaged(snapshot_id: str, file: str, problem: str) -> str:
    """A snapshot whose files are not as it recorded them (shared/snapshot_files.py)."""
    return f"snapshot {snapshot_id} is damaged: its file {file} {problem}"


def snapshot_import_damaged(source: str, file: str, problem: str) -> str:
    """An imported directory whose manifest lists its files, and one of them is not as listed."""
    return f"the snapshot directory {source} is damaged: its file {file} {problem}"


def snapshot_resumed_from_older(damaged_id: str, file: str, problem: str, older_id: str, step: int) -> str:
    """A run resuming past a damaged snapshot (the warn event of services/trainer_worker/execution.py)."""
    return (f"snapshot {damaged_id} is damaged (its file {file} {problem}); resuming from {older_id} "
            f"(step {step}), the newest intact snapshot with training state")


SNAPSHOT_PATH_IMPORT_ADMIN_ONLY = ("importing a snapshot by a path on the API's machine needs an admin token; "
                                   "upload the directory instead (`training snapshots import DIR`)")
SNAPSHOT_PATH_IMPORT_OFF = ("this deployment imports snapshots by path from no directory (snapshotImportRoots is "
                            "empty); upload the directory instead (`training snapshots import DIR`)")


def snapshot_path_outside_roots(path: str, roots: list[str]) -> str:
    return (f"path {path} is not inside a snapshot import root of this deployment "
            f"({', '.join(roots)}); its deployment config lists them under snapshotImportRoots")


def snapshot_path_not_plain(path: str, entry: str) -> str:
    return (f"{entry} in {path} is a symbolic link or not a plain file; a snapshot directory holds plain "
            "files and directories only")


SNAPSHOT_IMPORT_BODY = ("a snapshot import is a multipart upload of `file` (a .tar or .tar.gz of the snapshot "
                        "directory), or a JSON object with `path`, a directory on the API's own machine")


# --- Datasets (services/api/datasets.py).


def dataset_deleted(dataset_id: str, deleted_at: str) -> str:
    return f"dataset {dataset_id} was deleted at {deleted_at}; upload its rows again to use them"


def dataset_in_use(dataset_id: str, users: list[tuple[str, str, str]]) -> str:
    """users: (kind, id, status) of the runs and evaluations that still read the dataset's rows."""
    shown = ", ".join(f"{kind} {rid} ({status})" for kind, rid, status in users[:3])
    more = f" and {len(users) - 3} more" if len(users) > 3 else ""
    return (f"dataset {dataset_id} is still read by {shown}{more}; delete it once they have ended "
            "(a PAUSED run reads it again when it resumes)")


# --- Bad input (issue 14): every one a 4xx naming what was wrong, never a 500.


def json_too_deep(max_depth: int) -> str:
    """JSON nested deeper than shared/json_values.MAX_DEPTH (a phrase: the body, a row or a field precedes it)."""
    return f"nests lists and objects more than {max_depth} levels deep"


def lone_surrogate(code: int) -> str:
    """A JSON string escaping half of a UTF-16 surrogate pair alone: not text any tokenizer reads."""
    return f"holds a lone surrogate (\\u{code:04x}), which is not text; a surrogate escape must be half of a pair"


def lone_surrogate_in_key(code: int) -> str:
    return f"has a key holding a lone surrogate (\\u{code:04x}), which is not text; a surrogate escape must be half of a pair"


def request_body_refused(field: str | None, problem: str) -> str:
    """A JSON request body that shared/json_values refuses (`problem` from json_too_deep, lone_surrogate)."""
    return f"the request body {problem}" if field is None else f"the request body's field {field} {problem}"


WORKLOAD_RULE = "workload must be 1 to 64 letters, digits or `_.-`"
ENDPOINT_NAME_DOTS = "may not be `.` or `..`, which a URL path reads as a step, not a name"


def status_empty(what: str, known: list[str], *, param: str = "status") -> str:
    """?status= (or an endpoint list's ?phase=) given with nothing in it: a slip, not "any state"."""
    return f"?{param}= names no state of {what}; name one or more of {', '.join(known)}, or leave it out"


def log_after_invalid(raw: str, max_index: int) -> str:
    """?after=N of an event or metric log: the index of its first entry to answer."""
    return f"after must be a whole number from 0 to {max_index}, not {raw!r}"


def target_modules_unknown(*, model: str, unknown: list[str], modules: list[str]) -> str:
    """adapter.targetModules names modules the model does not have (the catalog's loraTargetModules)."""
    return (f"model {model} has no module {', '.join(unknown)} to adapt; its LoRA target modules are "
            f"{', '.join(modules)} (or \"all-linear\")")


def snapshot_import_path_too_long(max_bytes: int, max_name_bytes: int) -> str:
    return (f"path is longer than a path on the API's machine may be ({max_bytes} bytes, and {max_name_bytes} "
            "for each name in it)")


def endpoint_answer_unreadable(endpoint_id: str, status: int) -> str:
    """A serving process answered a proxied request with an error whose body is not a JSON error."""
    return f"the serving process of endpoint {endpoint_id} answered {status} without a readable error"


def endpoint_process_failed(endpoint_id: str, message: str) -> str:
    """A serving process answered a proxied request with a 5xx: relayed as 502, its sentence kept."""
    return f"the serving process of endpoint {endpoint_id} failed to answer: {message}"


def epochs_too_many_steps(*, epochs: float, rows: int, batch_size: int, steps: int, max_steps: int) -> str:
    """A plan by epochs whose step count (epochs x rows / batchSize) passes what a run may train."""
    return (f"{epochs:g} epoch(s) of {rows} row(s) at batchSize {batch_size} make {steps} steps, and a run trains "
            f"{max_steps} at most; train fewer epochs or set maxSteps")


# --- Trackers (shared/tracker_config.py, services/trainer_worker/trackers/)


def tracker_package_missing(tracker: str, package: str, source: str) -> str:
    return (f"deployment config: trackers.reportTo names {tracker}, but this worker's Python has no "
            f"{package} package (it comes with {source})")


def tracker_failed(tracker: str, what: str, error: str) -> str:
    return f"{tracker} {what} and gets no more of this run's metrics: {error}; the run trains on"


def run_has_no_tensorboard_events(run_id: str) -> str:
    return f"run {run_id} has no TensorBoard event files yet: they are written from its first step"


# --- Reward calls that cannot be let run: patterns RE2 refuses, registered functions past their
# time budget (shared/rewards.py, shared/reward_process.py). `where` is the reward entry
# (grpo.rewards.0) at submission, or the step / row being scored ("step 3", "row 7").


def reward_pattern_refused(where: str, problem: str) -> str:
    """A regex reward's pattern that RE2 does not compile (a backreference, a lookaround, a
    possessive quantifier, a repetition past 1000, or plain bad syntax)."""
    return (f"{where}.pattern: RE2, which matches reward patterns, refuses it: {problem}; it has no "
            "backreferences, lookahead or lookbehind, so that no pattern can take more than linear time "
            "on a completion")


def reward_call_overran(where: str, key: str, reference: str, budget_s: float) -> str:
    """A registered reward function gave no score for one completion within its budget."""
    return (f"{where}: reward {key} ({reference}) did not score a completion within {budget_s:g}s, so it was "
            "stopped (the budget of one reward call is TRAINING_REWARD_CALL_BUDGET_S on the worker)")


def reward_call_raised(where: str, key: str, error: str) -> str:
    """A registered reward function raised on a completion."""
    return f"{where}: reward {key} failed on a completion: {error}"


def reward_process_ended(where: str, key: str, how: str) -> str:
    """The process that runs registered reward functions ended while scoring (`how`: how_it_ended)."""
    return f"{where}: the process scoring reward {key} {how} before it gave a score"


# --- Query parameters, queue caps and Flower's gate (issue 26, item 6); one block, kept together

WORKLOAD_NAME_RULE = "a workload name is 1 to 64 letters, digits or `_.-`"


def query_workload_invalid(param: str = "workload") -> str:
    """A query parameter naming a workload breaks the rule of workload names (shared/names.py)."""
    return f"?{param}= must name a workload: 1 to 64 letters, digits or `_.-`"


def query_id_invalid(param: str, what: str, prefix: str) -> str:
    """A query parameter naming a resource by id (?run=, ?comparison=, ?after=) has no id's shape."""
    return f"?{param}= must be the id of a {what}: `{prefix}-` then 1 to 64 letters, digits, `_` or `-`"


def query_file_name_invalid(param: str, max_chars: int) -> str:
    """?name= of a snapshot import: the upload's file name, one path segment."""
    return f"?{param}= must be a file name: 1 to {max_chars} characters, no `/` and no control characters"


FLOWER_NEEDS_BASIC_AUTH = ("flower: set FLOWER_BASIC_AUTH (user:password); this deployment serves no Flower "
                           "route without it")
FLOWER_AUTH_REQUIRED = "Flower needs its basic auth (user:password) on every route"


def queued_claims_cap(*, workload: str, cap: int, queued: int, asked: int) -> str:
    """A submission that would queue more claims for a workload than the deployment's
    scheduling.maxQueuedPerWorkload allows (shared/claims/queue.py)."""
    return (f"workload {workload} has {queued} run(s), evaluation(s) and endpoint(s) queued for GPUs, and this "
            f"would queue {asked} more; this deployment lets one workload queue {cap} at most. Wait for some to "
            "start, or cancel some")


# --- Full disks, archives held to their manifest, numbers and bodies (issue 26 items 4 and 5)

# The answer (507) of a request whose write met a full disk (ENOSPC, EDQUOT) where the trainer
# keeps artifacts: services/api/app.py, shared/disk_full.py. Whatever was half-written is removed.
DISK_FULL = ("the trainer's disk is full (no space left where it stores artifacts), so nothing was stored; "
             "free space there, then send the request again")


def run_paused_disk_full(step: int) -> str:
    """Detail (and warn event) of a run whose snapshot could not be written for a full disk: PAUSED,
    not FAILED; the half-written snapshot is removed and its earlier snapshots are kept."""
    return (f"paused: the snapshot of step {step} could not be written because the disk is full (no space "
            "left where the trainer stores artifacts); free space there, then `training runs resume` continues "
            "from the run's latest snapshot")


def number_not_finite(token: str) -> str:
    """A JSON number that is not finite: NaN, Infinity, -Infinity, or one too large for a double (1e400)."""
    shown = token if len(token) <= 40 else token[:37] + "..."
    return f"is {shown}, which is not a finite number; every number must be finite"


def number_too_long(digits: int, most: int) -> str:
    return f"is a whole number of {digits} digits; a number may have at most {most}"


# A number field given a string ("0.1"): marshmallow would read it as the number.
NUMBER_NOT_A_STRING = "must be a JSON number, not a string"


def manifest_refused(field: str | None, problem: str) -> str:
    """snapshot.json holds JSON that shared/json_values refuses (`problem` from json_too_deep,
    lone_surrogate, number_not_finite, ...); `field` names where, None for the whole manifest."""
    return f"snapshot.json {problem}" if field is None else f"snapshot.json: {field} {problem}"


def manifest_too_large(most: int) -> str:
    return f"snapshot.json is larger than a manifest may be ({most} bytes)"


def snapshot_archive_unlisted(filename: str, member: str) -> str:
    """A file in an archive whose manifest lists its files, and not this one (`member` relative to
    the snapshot directory)."""
    return (f"{filename} holds {member}, which its manifest's files do not list; a snapshot directory holds "
            "the files its manifest lists and no others")


def snapshot_archive_outside_parts(filename: str, member: str, parts: list[str]) -> str:
    """A file outside every part directory the manifest declares (`parts`, e.g. ["adapter/", "training_state/"])."""
    where = f"its parts lie in {', '.join(parts)}" if parts else "it declares no parts"
    return (f"{filename} holds {member}, which is in no part of the snapshot ({where}); a snapshot directory "
            "holds its manifest and its parts' files only")


def snapshot_archive_twice(filename: str, member: str) -> str:
    return f"{filename} holds {member} twice; a snapshot directory has one file of each name"


def snapshot_archive_outside_root(filename: str, member: str, root: str) -> str:
    return (f"{filename} holds {member}, outside the snapshot directory {root}/ that holds its manifest; an archive "
            "holds one snapshot directory")


def snapshot_archive_declares_too_much(filename: str, declared: int, limit: int) -> str:
    return (f"{filename}'s manifest lists {declared} bytes of files, more than this deployment accepts "
            f"({limit} bytes unpacked)")


def adapter_config_refused(file: str, problem: str) -> str:
    """An imported snapshot's adapter_config.json that no reader could take (`problem`, e.g. "is not
    a JSON object", json_too_deep's phrase); `file` relative to the snapshot directory."""
    return f"{file} {problem}; an adapter config is a JSON object of PEFT's settings"


def snapshot_member_refused(member: str, problem: str) -> str:
    """tarfile's `data` filter refused a member; said without the server's paths."""
    return f"{member} {problem}"


# --- Several nodes (issue 27): a node whose service stopped answering, and what its work does
# (services/scheduler/dead_nodes.py, lost.py, lost_endpoints.py; shared/claims/nodes.py).
# `service` is how a node's service is named to users: "worker" or "endpoint manager".

def node_not_answering(node: str, *, kind: str, after_s: float) -> str:
    """Warn event of a dispatched run or evaluation, the first time the scheduler sees its node's
    worker heartbeat gone (it waits `after_s` more before moving it)."""
    return (f"node {node} stopped answering (its worker's heartbeat is gone); the {kind} goes back to the "
            f"queue unless it answers within {after_s:g}s")


def node_dead_requeued(node: str) -> str:
    """Warn event of a run or evaluation given back because its node stopped answering."""
    return f"node {node} stopped answering; re-queued keeping its place"


def node_dead_cancelled(node: str) -> str:
    """Detail of a cancel-requested run whose node stopped answering before it stopped the run."""
    return f"cancelled by the user; its node {node} stopped answering before it stopped"


def endpoint_moved_off(node: str) -> str:
    """Warn event of a READY or STARTING endpoint moved off a node whose endpoint manager is gone
    (services/scheduler/lost_endpoints.py): it queues again for a node that has one."""
    return (f"no endpoint manager runs on node {node}; back in the queue keeping its place, to start on a node "
            "that has one")


def node_not_answering_wait(node: str, *, free_gpus: int, service: str) -> str:
    """What a waiting claim says of a node big enough for it whose service does not answer
    (`waitingOn.notAnswering`, shared/claims/waiting.py): nothing is granted there."""
    if free_gpus:
        return f"node {node} has {free_gpus} free GPU{'' if free_gpus == 1 else 's'} but its {service} is not answering"
    return f"node {node}'s {service} is not answering"


def node_service_state(*, alive: bool, ready: bool = True) -> str:
    """How `training pools get` and `training info` show one service of a node."""
    if not alive:
        return "not answering"
    return "alive" if ready else "alive, still starting"


# `training stop SERVICE` / `training start SERVICE` (training_cli/local_stack.py, supervisor.py)

def service_stopping_on_request(name: str, pid: int) -> str:
    """Supervisor log line: `training stop` asked for this service."""
    return f"stopping {name} (pid {pid}): training stop asked for it"


def service_held(name: str) -> str:
    """Supervisor log line: a service `training stop` stopped, left stopped."""
    return f"{name} stopped; it stays stopped until: training start {name}"


def no_such_service(name: str, services: list[str]) -> str:
    return f"the local stack has no service {name}; its services: {', '.join(services)}"


def service_stopped_by_request(name: str, pid: int | None) -> str:
    """What `training stop NAME` prints (`pid` None: it was not running)."""
    return (f"stopped {name}" + (f" (pid {pid})" if pid else "")
            + f"; the supervisor leaves it stopped until: training start {name}")


def service_started_by_request(name: str, pid: int) -> str:
    """What `training start NAME` prints."""
    return f"started {name} (pid {pid})"


def service_already(name: str, state: str) -> str:
    """What `training stop` / `training start` prints for a service already in that state."""
    return f"{name} is already {state}"


# --- The run plan (shared/plans/: its schema, its check) and the runs API (services/api/runs.py,
# branches.py, grpo_plans.py)

PLAN_NOT_AN_OBJECT = "the plan must be a JSON object"
TARGET_MODULES_SHAPE = 'must be "all-linear" or a non-empty list of module names'
BATCH_NOT_A_MULTIPLE_OF_ACCUMULATION = "must be a multiple of gradientAccumulation"


def plan_field_refused(field: str, problem: str) -> str:
    """A plan field the schema or a rule refuses: `plan field hyperparameters.epochs: ...`."""
    return f"plan field {field}: {problem}"


def validation_format_differs(*, validation: str, validation_format: str, dataset: str, dataset_format: str) -> str:
    return (f"validation dataset {validation} holds {validation_format} rows and dataset {dataset} holds "
            f"{dataset_format} rows; a run validates on rows of its training format")


def plan_pool_unknown(pool: str) -> str:
    """A plan's execution.pool that the deployment does not have."""
    return f"pool {pool} does not exist in this deployment"


def snapshot_unknown(snapshot_id: str) -> str:
    """A snapshot a request names that does not exist, or that this token may not see."""
    return f"snapshot {snapshot_id} does not exist"


def run_already_ended(run_id: str, status: str) -> str:
    return f"run {run_id} has already ended ({status})"


def run_queued(*, pool: str, gpus: int, engine: str) -> str:
    """A new run's first event."""
    return f"queued in pool {pool} for {gpus} GPU(s); engine {engine}"


def run_resumed(*, pool: str, gpus: int) -> str:
    """The event of a run the user resumed."""
    return f"resumed by the user; queued in pool {pool} for {gpus} GPU(s)"


RUN_CANCEL_REQUESTED = "cancel requested by the user"
RUN_CANCELLED = "cancelled by the user"
RUN_PAUSE_REQUESTED = "pause requested by the user"


def plan_field_unknown(field: str) -> str:
    """A stored plan holding a key no field of the plan has (training_plan.py reads none by half)."""
    return f"plan field {field} is not a field of a run plan"


def plan_field_missing(field: str) -> str:
    """A stored plan without a field that has no default (model, dataset)."""
    return f"plan field {field} is missing, and it has no default"
