"""What a run fails with when its engine raised what a library raises (issue 30): the common ones
said as sentences that name the cause and the plan field that fixes it, instead of a library's words
(`num_samples should be a positive integer value, but got num_samples=0`). Anything else is
`WorkFailed.of`'s: its own words, and where the traceback is (the run's process log has it)."""

from __future__ import annotations

from typing import Any

from shared import reasons
from shared.errors import TrainerError, WorkFailed
from shared.plans import TrainingPlan

# What the libraries' out-of-memory errors say (torch.OutOfMemoryError, a CUDA or MPS allocator's
# RuntimeError, Python's MemoryError).
OUT_OF_MEMORY = ("out of memory", "outofmemory", "cannot allocate memory", "failed to allocate")
# torch's sampler over a training set that tokenizing and cutting to maxSeqLength left empty
NO_SAMPLES = "num_samples should be a positive integer value, but got num_samples=0"
NO_CHAT_TEMPLATE = ("chat_template is not set", "cannot use chat template functions")


def _plan(run: dict[str, Any]) -> TrainingPlan | None:
    try:
        return TrainingPlan.from_dict(run.get("plan") or {})
    except (KeyError, ValueError, TypeError):
        return None


def engine_failure(exc: BaseException, run: dict[str, Any]) -> WorkFailed:
    """The failure a run shows for what its engine raised."""
    if isinstance(exc, (WorkFailed, TrainerError)):
        return WorkFailed.of(exc)
    words = reasons.error_text(exc)
    lowered, kind = words.lower(), type(exc).__name__.lower()
    plan = _plan(run)
    hp = plan.hyperparameters if plan is not None else None
    if isinstance(exc, MemoryError) or "outofmemory" in kind or any(m in lowered for m in OUT_OF_MEMORY):
        return WorkFailed(reasons.engine_out_of_memory(
            words, batch_size=hp.batch_size if hp else None, max_seq_length=hp.max_seq_length if hp else None))
    if NO_SAMPLES in words:
        return WorkFailed(reasons.engine_no_rows_left(hp.max_seq_length if hp else None))
    if any(m in lowered for m in NO_CHAT_TEMPLATE):
        return WorkFailed(reasons.MODEL_HAS_NO_CHAT_TEMPLATE)
    if type(exc).__module__.startswith("jinja2"):
        return WorkFailed(reasons.chat_template_failed(words))
    return WorkFailed.of(exc)
