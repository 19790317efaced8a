"""The events of work on a worker as it goes (services/trainer_worker/execution.py, reporter.py,
evaluation_job.py, engines/): taken, loaded, training, snapshots written, stopping, done."""

from __future__ import annotations


# A stop asked of a process that installed no stop handling (a test or tool outside a pool process).
NO_STOP_HANDLING = "no stop handling is installed in this process"


def work_taken(holder: str, kind: str, devices: list[str], fence: int) -> str:
    """A worker took a granted run or evaluation (`holder`: node/host/pid)."""
    return f"worker {holder} took the {kind} on {', '.join(devices)} (fence {fence})"


def restoring(what: str, snapshot: str) -> str:
    return f"restoring {what} from {snapshot}"


def model_loaded(model: str, parameters_m: float, precision: str, seconds: float) -> str:
    """Where a run's start-up goes (bench/platform_overhead.py reads it): the model apart from the data."""
    return f"loaded {model} ({parameters_m:.1f}M parameters, {precision}) in {seconds:.1f}s"


def training_started(total_steps: int) -> str:
    return f"training started: {total_steps} steps"


def sft_started(*, model: str, rows: int, devices: list[str], packed: int | None, max_length: int,
                validation_rows: int, per_device: int, loss: str, restore: str) -> str:
    """An sft run's first event (`packed`: the sequences its rows were packed into, None unpacked;
    `loss`: one of the LOSS_ phrases; `restore`: restore_continuing, restore_over_adapter or "")."""
    return (f"training {model} on {rows} rows on {', '.join(devices)}, "
            + (f"packed into {packed} sequences of at most {max_length} tokens, " if packed is not None else "")
            + (f"validating on {validation_rows} rows, " if validation_rows else "")
            + f"{per_device} {'sequence' if packed is not None else 'row'}(s) per device per micro-batch, "
            + loss + restore)


def grpo_started(*, model: str, prompts: int, devices: list[str], prompts_per_step: int, generations: int,
                 reference: str, server: str, ready_s: float, restore: str) -> str:
    return (f"training {model} with grpo on {prompts} prompts on {', '.join(devices)}: "
            f"{prompts_per_step} prompt(s) x {generations} completions per step, KL reference {reference}; "
            f"rollouts from a serving process at {server} (ready in {ready_s:.1f}s)" + restore)


# What sft's loss is taken over (engines/sft.py loss_phrase).
LOSS_EVERY_TOKEN = "the loss over every token (trainOnPrompt)"
LOSS_COMPLETIONS = "the loss over the completions"


def loss_assistant_turns(trained: int, total: int, images: int | None = None) -> str:
    counted = f"{trained} of {total} tokens" + (f", {images} images" if images is not None else "")
    return f"the loss over the assistant turns ({counted})"


def restore_continuing(step: int, layout: int) -> str:
    """How a run's first event ends when it continues a snapshot's training state."""
    return f", continuing the training state of step {step} (layout {layout})"


def restore_over_adapter(step: int, layout: int) -> str:
    return f", over the adapter of step {step} (layout {layout}) with a fresh optimizer"


def pausing_at(step: int) -> str:
    return f"pausing at step {step}: writing a snapshot with training state"


def stopping_cancelled_at(step: int) -> str:
    return f"stopping at step {step}: the run was cancelled"


def snapshot_written(snapshot_id: str, step: int, *, final: bool) -> str:
    return f"snapshot {snapshot_id} written at step {step}" + (" (final)" if final else "")


def run_succeeded(step: int, first_loss: float | None, last_loss: float | None) -> str:
    if first_loss is None:
        return f"succeeded at step {step}"
    return f"succeeded at step {step}: loss {first_loss:.4f} -> {last_loss:.4f}"


def run_paused_by_user(step: int) -> str:
    return f"paused at step {step}; its GPUs are released. `training runs resume` continues it exactly"


def evaluation_scoring(*, rows: int, dataset: str, model: str, snapshot: str | None, dtype: str, device: str,
                       max_tokens: int) -> str:
    return (f"scoring {rows} row(s) of {dataset} with {model}"
            + (f" and the adapter of {snapshot}" if snapshot else "")
            + f" ({dtype} on {device}, greedy, at most {max_tokens} token(s))")

