"""Where a grpo run's judge endpoints answer, read fresh from Redis (SPEC 4).

`JudgeAddresses` is the `TrainingJob.judge_address` the worker gives an engine. It is picklable
(the ranks of a multi-device run unpickle their job) and connects to Redis on first use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from shared.endpoint_names import find_endpoint
from shared.errors import Conflict
from shared.states import EndpointPhase


class JudgeTarget(NamedTuple):
    """Where a judge answers and the model name to ask for: its endpoint id, under which its serving
    process serves what the endpoint serves (a snapshot's adapter, or the base model)."""

    address: str
    model: str | None
    api_key: str | None = None  # its serving process's secret


@dataclass
class JudgeAddresses:
    redis_url: str
    key_prefix: str
    # judge (an id or a name) -> the workload the API found it in when the run was submitted: a name
    # is looked up there only (names are per workload, shared/endpoint_names.py)
    workloads: dict[str, str] = field(default_factory=dict)
    _store: Any = field(default=None, repr=False, compare=False)

    def __getstate__(self):
        return {"redis_url": self.redis_url, "key_prefix": self.key_prefix, "workloads": self.workloads,
                "_store": None}

    def store(self):
        if self._store is None:
            from shared.keys import Keys
            from shared.redis_retry import connect_retrying
            from shared.store import Store

            self._store = Store(connect_retrying(self.redis_url), Keys(self.key_prefix))
        return self._store

    def __call__(self, judge: str) -> JudgeTarget | None:
        """The judge's address and served name (it is named by its endpoint id, or the name of a
        READY endpoint) while READY, else None."""
        scope = self.workloads.get(judge)
        try:
            doc = find_endpoint(self.store(), judge, workloads=[scope] if scope else None)
        except Conflict:  # a run stored before judges were scoped, whose judge's name two workloads use
            return None
        if not doc or (scope and doc.get("workload") != scope) or doc.get("phase") != EndpointPhase.READY:
            return None
        api_key = (doc.get("process") or {}).get("apiKey")
        return JudgeTarget(doc["address"], doc["id"], api_key) if doc.get("address") else None
