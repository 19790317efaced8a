"""Evaluations and branch comparisons (SPEC 2.5; services/api/evaluations.py, comparisons.py,
services/trainer_worker/evaluation_job.py)."""

from __future__ import annotations

from shared.reasons.snapshots import snapshot_unknown as _snapshot_unknown


def comparison_weights_unreadable(snapshot_id: str) -> str:
    return (
        f"branch comparisons cannot evaluate snapshot {snapshot_id} yet: "
        "its weights are in a layout a comparison does not load"
    )


def evaluation_snapshot_unreadable(snapshot_id: str) -> str:
    """An evaluation of a snapshot whose adapter weights this deployment cannot load."""
    return f"snapshot {snapshot_id}'s weights are in a layout this deployment cannot load for an evaluation"


def evaluation_other_model(*, snapshot_id: str, snapshot_model: str, model: str) -> str:
    return f"snapshot {snapshot_id} holds an adapter of {snapshot_model}, and this evaluation scores {model}"


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
    return _snapshot_unknown(snapshot_id)


def comparison_not_queued(comparison_id: str) -> str:
    """An evaluation withdrawn because its comparison failed to queue the rest of its evaluations."""
    return f"withdrawn: comparison {comparison_id} could not queue all of its evaluations, so it queued none"


def evaluation_cancel_event(by: str, *, ended: bool) -> str:
    """The event of a cancel: `ended` when it ended at once (it was QUEUED), else requested."""
    return f"cancelled by {by}" if ended else f"cancel requested by {by}"


def evaluation_rows_missing(evaluation_id: str) -> str:
    return f"the per-row results of evaluation {evaluation_id} are missing from the artifact store"


def comparison_queued(count: int, pool: str) -> str:
    return f"queued {count} evaluation(s) in pool {pool}"


def evaluation_reward_refused(sentence: str) -> str:
    """A reward entry of an evaluation refused (`sentence` starts with the entry's field, e.g.
    `rewards.0.threshold: ...`), said as the other evaluation fields are."""
    return f"evaluation field {sentence}"


def comparison_row_ended(evaluation_id: str, snapshot_id: str | None, status: str, detail: str | None) -> str:
    """One failed or cancelled row of a comparison, in its detail (`snapshot_id` None: the base model's row)."""
    what = f"snapshot {snapshot_id}" if snapshot_id else "the base model"
    return f"evaluation {evaluation_id} of {what} {status.lower()}: {(detail or '').strip()}"
