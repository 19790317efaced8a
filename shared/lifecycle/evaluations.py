"""An evaluation's status (shared/lifecycle/states.py `EvaluationStatus`), written only through `EVALUATIONS`.

| edge | writer |
|---|---|
| (new) -> QUEUED | API: create (`EVALUATIONS.created()`) |
| QUEUED -> CANCELLED | API: cancel (or a comparison that could not queue all of its evaluations) |
| QUEUED -> STARTING | scheduler: dispatch, expecting QUEUED |
| STARTING/RUNNING -> QUEUED or CANCELLED | `shared/claims/orphans.give_back`, expecting its claim: the scheduler (worker lost), a worker starting (its node's orphans), stopping (its own work), or finding the work's previous process dead |
| STARTING -> RUNNING | worker, fenced: the model is loaded |
| STARTING/RUNNING -> SUCCEEDED, FAILED, CANCELLED | worker, fenced: scoring ended |
"""

from __future__ import annotations

from shared.lifecycle.core import Lifecycle
from shared.lifecycle.states import EvaluationStatus, evaluation_transition

EVALUATIONS = Lifecycle(kind="evaluation", field="status", states=EvaluationStatus, transition=evaluation_transition,
                        initial=EvaluationStatus.QUEUED, started_field="startedAt", running=EvaluationStatus.RUNNING)

ACTIVE = frozenset({EvaluationStatus.STARTING, EvaluationStatus.RUNNING})
DONE = EvaluationStatus.terminal()
