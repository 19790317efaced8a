"""The events of work on a worker as it goes (services/trainer_worker/run_job.py, reporter.py,
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


def grpo_step_learned_nothing(*, step: int, share: float, groups: int, reward: float | None, last: bool) -> str:
    """A grpo step whose every group gave all its completions the same reward (engines/grpo.py):
    advantages 0, nothing learned. docs/grpo.md, "A step that learns nothing"."""
    said = f"{groups} of {groups} group(s)" if groups else f"{share:.0%} of the groups"
    same = f" (mean reward {reward:.4f})" if reward is not None else ""
    return (f"step {step} learned nothing: in {said} every completion got the same reward{same}, so every "
            "advantage is 0. Try more generations, a higher temperature, a harder dataset, or rewards "
            "that tell completions apart"
            + ("; later such steps are counted in the metric equalRewardGroupShare, not logged" if last else ""))


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
                       max_tokens: str) -> str:
    """`max_tokens`: `evaluation_max_tokens_text`."""
    return (f"scoring {rows} row(s) of {dataset} with {model}"
            + (f" and the adapter of {snapshot}" if snapshot else "")
            + f" ({dtype} on {device}, greedy, at most {max_tokens})")


def evaluation_max_tokens_text(used: int, source: str | None, longest_reference: int | None) -> str:
    """How long an evaluation let each completion run and why (`maxTokensUsed`, `maxTokensFrom`):
    its scoring event and the `Max tokens` row of `evaluations get`."""
    why = {
        "request": "as asked",
        "references": f"the longest reference, {longest_reference}, plus a margin of {used - (longest_reference or 0)}",
        "model": "the model's max_new_tokens; no row has a reference",
        "deployment": "the deployment's limit; no row has a reference and the model does not say",
    }.get(source or "")
    return f"{used} token(s)" + (f" ({why})" if why else "")


# `evaluations get` before an evaluation that named no maxTokens has read its rows.
EVALUATION_MAX_TOKENS_PENDING = "from its rows: the longest reference plus a margin (decided when it starts scoring)"


# --- What an engine's library raised, said as a cause and a fix (services/trainer_worker/engine_errors.py)

def _without_full_stop(words: str) -> str:
    """A library's words before our own full stop: its own one dropped (an ellipsis kept)."""
    return words[:-1] if words.endswith(".") and not words.endswith("..") else words


def engine_out_of_memory(words: str, *, batch_size: int | None, max_seq_length: int | None) -> str:
    settings = (f" (batchSize {batch_size}, maxSeqLength {max_seq_length})"
                if batch_size is not None and max_seq_length is not None else "")
    return (f"training ran out of memory{settings}: {_without_full_stop(words)}; lower batchSize (raising gradientAccumulation keeps "
            "the same global batch) or maxSeqLength, or train on more GPUs")


def engine_no_rows_left(max_seq_length: int | None) -> str:
    """torch's empty sampler: every row was dropped before the first step (TRL drops a row whose
    tokens cut to maxSeqLength hold no token the loss is taken over)."""
    within = f" within maxSeqLength {max_seq_length}" if max_seq_length is not None else ""
    return (f"no row is left to train on: no row has a token the loss is taken over{within} (a row whose prompt "
            "fills the length is dropped). Raise maxSeqLength, or shorten the rows' prompts")


def rows_without_trained_tokens(*, rows: int, max_seq_length: int, needed: int) -> str:
    """sft, before its first step: every row's first trained token lies past maxSeqLength."""
    return (f"no row is left to train on: none of the {rows} row(s) has a token the loss is taken over within "
            f"maxSeqLength {max_seq_length} (the shortest prompt fills {needed - 1} tokens). Set maxSeqLength to "
            f"at least {needed}, or shorten the rows' prompts")


def rows_left_out_for_length(*, dropped: int, rows: int, max_seq_length: int) -> str:
    """sft, a warn event before its first step: some rows have no trained token within maxSeqLength."""
    return (f"{dropped} of {rows} row(s) have no token the loss is taken over within maxSeqLength {max_seq_length} "
            "and are left out; raise maxSeqLength to train on them")


MODEL_HAS_NO_CHAT_TEMPLATE = ("the model's tokenizer has no chat template, so chat rows cannot be tokenized; train "
                              "on prompt and completion rows, or on a model with a chat template")


def chat_template_failed(words: str) -> str:
    return (f"the model's chat template could not render a row: {_without_full_stop(words)}; check the rows' roles and their order "
            "(many templates want user and assistant turns in turn, and a system turn only first)")


def loss_not_finite(*, step: int, loss: float, learning_rate: float) -> str:
    """A step whose loss is NaN or infinite: training diverged, and going on would train on nothing."""
    return (f"the loss was {loss} at step {step}: training diverged. Lower learningRate (it was "
            f"{learning_rate:g} at that step), or train in fp32 or bf16 rather than fp16")


def memory_peak_above_estimate(*, peak_gib: float, estimate_gib: float, rank: int, measured_as: str) -> str:
    """A run's measured peak passed its estimate (services/trainer_worker/reporter.py): the estimate
    is wrong on the unsafe side for this plan, and a larger one may not fit where it was admitted."""
    return (f"peak memory {peak_gib:.2f} GiB (rank {rank}, {measured_as}) is above the estimate of "
            f"{estimate_gib:.2f} GiB: the estimate is too low for this plan")
