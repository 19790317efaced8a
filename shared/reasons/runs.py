"""Runs as they stop, fail, pause and resume: the details stored on them, and what their trackers
say (shared/tracker_config.py, services/trainer_worker/trackers/)."""

from __future__ import annotations

from shared.reasons.scheduling import device_count

CANCELLED_BY_USER = "cancelled by the user"
CANCELLED_WHILE_QUEUED = "cancelled by the user before it was granted GPUs"


def run_failed(error: str) -> str:
    """Detail of a FAILED run: `error` is a plain sentence (shared/errors.WorkFailed), never a class name."""
    return f"training failed: {error}"


def failed_unforeseen(error: str) -> str:
    """What a run or evaluation fails with when its work raised an error nobody foresaw (a
    library's, a bug): its words (phrases.error_text), and where its traceback is."""
    return f"{error} (the worker did not foresee this error; its log has the traceback)"


def cannot_pause(run_id: str, status: str) -> str:
    return f"run {run_id} is {status}; only a STARTING or RUNNING run can be paused"


def cannot_resume(run_id: str, status: str) -> str:
    return f"run {run_id} is {status}; only a PAUSED run can be resumed"


def rank_failed(*, rank: int, world: int, how: str) -> str:
    """SPEC 3.2: one process of a multi-GPU run failed; `how` is e.g. "was killed by SIGKILL"."""
    return f"rank {rank} of {world} {how}; the other ranks were stopped"


def tracker_package_missing(tracker: str, package: str, source: str) -> str:
    return (f"deployment config: trackers.reportTo names {tracker}, but this worker's Python has no "
            f"{package} package (it comes with {source})")


def tracker_failed(tracker: str, what: str, error: str) -> str:
    return f"{tracker} {what} and gets no more of this run's metrics: {error}; the run trains on"


def run_has_no_tensorboard_events(run_id: str) -> str:
    return f"run {run_id} has no TensorBoard event files yet: they are written from its first step"


def run_paused_disk_full(step: int) -> str:
    """Detail (and warn event) of a run whose snapshot could not be written for a full disk: PAUSED,
    not FAILED; the half-written snapshot is removed and its earlier snapshots are kept."""
    return (f"paused: the snapshot of step {step} could not be written because the disk is full (no space "
            "left where the trainer stores artifacts); free space there, then `training runs resume` continues "
            "from the run's latest snapshot")


# --- What training on a worker fails with (services/trainer_worker/engines/), each the sentence of
# a shared/errors.WorkFailed.

def engine_missing(engine: str) -> str:
    """A run whose engine this worker's build does not have (an older worker beside a newer API)."""
    return f"this worker has no engine {engine}"


def snapshot_training_state_unreadable(snapshot: str) -> str:
    """A snapshot to resume from whose training state is in no layout this deployment reads."""
    return f"snapshot {snapshot} holds no training state this deployment reads"


# A restored grpo checkpoint whose reference policy is an adapter the model does not carry.
REFERENCE_ADAPTER_MISSING = "the checkpoint's reference is an adapter, and the model has no reference adapter"
# An image-text row whose prompt and whole conversation the processor tokenized differently, so
# its loss mask would fall on the wrong tokens.
PROCESSOR_TOKENIZED_TWO_WAYS = "the processor tokenized one conversation two ways"


def rollout_server_ended(how: str, last_error: str) -> str:
    """A grpo run's rollout server ended before it answered (`how`: phrases.how_it_ended;
    `last_error`: the words of the last error in its log, engines/child_logs.py)."""
    return f"the rollout server {how} before it was ready" + (f": {last_error}" if last_error else "")


def rollout_server_not_ready(timeout_s: float, last_error: str) -> str:
    return (f"the rollout server did not answer within {timeout_s:.0f}s"
            + (f"; the last error in its log: {last_error}" if last_error else ""))


def rollout_server_does_not_fit(*, free_gib: float, device_gib: float, server_gib: float) -> str:
    """A grpo run's GPU, once its trainer is counted, has too little left for its rollout server."""
    return (f"the trainer leaves {free_gib:.1f} GiB of {device_gib:.1f} GiB free, "
            f"and the rollout server needs {server_gib:.1f} GiB")


def rollout_server_refused(path: str, status: int, answer: str) -> str:
    """The rollout server answered a request with an error (`answer`: its body, cut to 500 characters)."""
    return f"the rollout server answered {path} with {status}: {answer}"


def rollout_server_short(*, answered: int, prompts: int, n: int) -> str:
    return f"the rollout server answered {answered} completions for {prompts} prompt(s) x {n}"


# --- A run's own events and refusals in the runs API (services/api/runs.py)

def run_already_ended(run_id: str, status: str) -> str:
    return f"run {run_id} has already ended ({status})"


def run_queued(*, pool: str, gpus: int, engine: str, device_kind: str = "cuda") -> str:
    """A new run's first event; `device_kind` "cpu": the pool's nodes have CPU slots."""
    return f"queued in pool {pool} for {device_count(gpus, device_kind)}; engine {engine}"


def run_resumed(*, pool: str, gpus: int, device_kind: str = "cuda") -> str:
    """The event of a run the user resumed."""
    return f"resumed by the user; queued in pool {pool} for {device_count(gpus, device_kind)}"


RUN_CANCEL_REQUESTED = "cancel requested by the user"
RUN_CANCELLED = CANCELLED_BY_USER
RUN_PAUSE_REQUESTED = "pause requested by the user"


# --- A run whose engine trained no step (issue 30: never SUCCEEDED in silence)

def run_trained_no_step(*, start_step: int, end_step: int) -> str:
    """Why a run's engine took no step (engines/base.py NothingToTrain): it starts at or past the
    step its plan ends at (a trainingState branch by epochs, which the API could only estimate, or a
    plan stored before the API refused such branches)."""
    return (f"there is no step to train: it starts at step {start_step}, and its plan ends at step {end_step}. "
            "maxSteps is the step a run ends at; a trainingState branch counts on from its snapshot's step")


def run_nothing_left_to_train(step: int) -> str:
    """Event of a resumed run whose own latest snapshot was already at its last step (its worker
    was lost after writing it): nothing was left to train, and the run ends SUCCEEDED."""
    return (f"nothing left to train: this run's own snapshot of step {step} is already at its last step "
            "(its previous worker stopped after writing it); it ends SUCCEEDED with no new step")


# --- A run's process log (services/trainer_worker/process_log.py; GET /v1/runs/ID/process-log)

def process_log_started(*, holder: str, attempt: int) -> str:
    """The first line of one worker process's log of a run."""
    return f"worker process {holder} takes the run (attempt {attempt})"


def process_log_cut(cut_bytes: int, kept_bytes: int) -> str:
    return f"[the first {cut_bytes} bytes of this process's log were cut: it keeps its last {kept_bytes} bytes]"


def process_log_rank_output(rank: str, size: int, shown: int) -> str:
    """Before a rank's own output, as a run across several devices ends."""
    return (f"--- the output of {rank} ({size} bytes" + (f"; its last {shown} shown" if shown < size else "")
            + ") ---")


def process_logs_left_out(left_out: int, shown: int) -> str:
    """The API's answer holds the logs of the last processes that trained the run."""
    return f"[{left_out} earlier process log(s) of this run are left out: the last {shown} are shown]"


def run_has_no_process_log(run_id: str) -> str:
    return f"run {run_id} has no process log yet: it is written once a worker starts training it"
