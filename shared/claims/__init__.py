"""Claims on devices (SPEC 5): every service queues, grants, releases and explains them the same way.

- `queue.py`: `ClaimQueue`, the claim documents and the pools' sorted sets in Redis (submit,
  release, requeue, the grant pass).
- `grants.py`: the grant rules as pure Python (`decide`, `plan_grants`).
- `nodes.py`: which nodes have a live worker.
- `waiting.py`: what a waiting claim waits on, derived from the same rules.
- `orphans.py`: work whose worker is gone, and how it goes back to the queue.
- `queued.py`: the cap on the claims one workload may have queued.
"""
