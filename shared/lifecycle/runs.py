"""A run's status (shared/lifecycle/states.py `RunStatus`), written only through `RUNS`.

Who moves a run where (each through `RUNS.apply` inside its own Store.update, or `RUNS.move`):

| edge | writer |
|---|---|
| (new) -> QUEUED | API: create (`RUNS.created()`) |
| QUEUED -> CANCELLED, PAUSED -> CANCELLED | API: cancel |
| PAUSED -> QUEUED | API: resume |
| QUEUED -> STARTING | scheduler: dispatch, expecting QUEUED |
| STARTING/RUNNING -> QUEUED or CANCELLED | `shared/claims/orphans.give_back`, expecting its claim: the scheduler (worker lost), a worker starting (its node's orphans), stopping (its own work), or finding the work's previous process dead |
| STARTING -> RUNNING | worker, fenced: the engine is loaded |
| STARTING/RUNNING -> SUCCEEDED, FAILED, CANCELLED, PAUSED | worker, fenced: the engine ended |

A cancel or pause of a run a worker holds is a request (`cancelRequested`, `pauseRequested`), not a
status: the worker ends it.
"""

from __future__ import annotations

from shared.lifecycle.core import Lifecycle
from shared.lifecycle.states import RunStatus, run_transition

RUNS = Lifecycle(kind="run", field="status", states=RunStatus, transition=run_transition, initial=RunStatus.QUEUED,
                 started_field="startedAt", running=RunStatus.RUNNING)

# A worker holds the run (its lease, its devices).
ACTIVE = frozenset({RunStatus.STARTING, RunStatus.RUNNING})
# The run needs no devices any more: its claim can be released.
DONE = frozenset(RunStatus.terminal() | {RunStatus.PAUSED})
