"""A GRPO run's rollout samples as the API answers them (GET /v1/runs/RUN/samples): one step's
(?step=N), or the latest steps newest first, a page of ?limit steps continued with ?after=STEP
(the nextCursor of the page before: steps below it)."""

from __future__ import annotations

from typing import Any

from services.api.context import Context
from services.api.paging import page
from shared import reasons
from shared.errors import NotFound
from shared.store.rollout_samples import SAMPLE_STEPS, latest_per_step


def samples_page(context: Context, run_id: str, *, step: int | None, limit: int, after: int | None) -> dict[str, Any]:
    """`{items, nextCursor}` of the run's step samples (the run is already known to be visible).

    The first page (what the dashboard asks for as a run trains) reads only the last entries stored:
    a step is stored more than once only when a resumed run trains it again, so twice the page's
    steps is nearly always enough; the whole list is read when it is not (at most SAMPLE_STEPS
    entries, tens of KB each)."""
    samples = None
    if step is None and after is None:
        tail = latest_per_step(context.store.samples(run_id, last=2 * (limit + 1)))
        if len(tail) > limit or context.store.sample_count(run_id) <= 2 * (limit + 1):
            samples = tail
    if samples is None:
        samples = latest_per_step(context.store.samples(run_id))
    if step is not None:
        found = [s for s in samples if s["step"] == step]
        if not found:
            raise NotFound(reasons.run_has_no_samples_at(run_id, step, [s["step"] for s in samples], SAMPLE_STEPS),
                           details={"field": "step"})
        return page(found, None)
    if after is not None:
        samples = [s for s in samples if s["step"] < after]
    items = samples[:limit]
    return page(items, str(items[-1]["step"]) if len(samples) > limit else None)
