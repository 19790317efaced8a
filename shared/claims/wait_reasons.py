"""Why a waiting claim has not been granted yet (SPEC 5): one stable token per reason.

These tokens are API (`scheduling.reason` of a run, `reason` of each queue entry of a pool); never
rename one. The scheduler's grant rules (shared/claims/grants.py `decide`) give every waiting
claim exactly one of them, so what a claim is said to wait on is what the scheduler does.
"""

from __future__ import annotations

# First in line among the claims its quota lets through, and no node of its pool has that many
# devices free right now. It holds back every claim queued after it until a node frees enough.
WAITING_FOR_GPUS = "waiting_for_gpus"

# A claim ahead of it holds it back: the first claim that fits no node (which stops the pass), or
# an earlier claim of its own workload that waits on the quota (a workload's claims start in order).
QUEUED_BEHIND = "queued_behind"

# Its workload's quota in this pool blocks it: what the workload holds plus this claim would pass
# the quota. It is passed over; later claims of other workloads may start. `quota` names it.
QUOTA = "quota"

# Devices are free for it now; the scheduler's next pass (within about a second) grants it.
FITS_NOW = "fits_now"

# It asks for more devices than the largest node of its pool has (the pool shrank after it was
# queued; submission refuses such claims). It is passed over and never blocks the pool.
EXCEEDS_POOL = "exceeds_pool"

# Every node of its pool big enough to hold it lacks the service that would carry it out: a live
# worker for a run or evaluation (`node:NAME:alive`), a live endpoint manager for an endpoint
# (`node:NAME:endpoint-manager`); the scheduler grants nothing there. It is passed over and never
# blocks the pool. (The token keeps its first name, from when only workers counted.)
NO_LIVE_WORKER = "no_live_worker"

ALL = (WAITING_FOR_GPUS, QUEUED_BEHIND, QUOTA, FITS_NOW, EXCEEDS_POOL, NO_LIVE_WORKER)
