"""A GRPO run's rollout samples as the API answers them (GET /v1/runs/RUN/samples): one step's
(?step=N), or the latest steps newest first, a page of ?limit steps continued with ?after=STEP
(the nextCursor of the page before: steps below it)."""

from __future__ import annotations

from typing import Any

from services.api.context import Context
from services.api.paging import page
from shared import reasons
from shared.errors import NotFound
from shared.rollout_samples import SAMPLE_STEPS, latest_per_step


def samples_page(context: Context, run_id: str, *, step: int | None, limit: int, after: int | None) -> dict[str, Any]:
    """`{items, nextCursor}` of the run's step samples (the run is already known to be visible)."""
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
