"""Judges: endpoints whose answer scores a completion (SPEC 4, 7), for grpo runs and evaluations alike.

A document names its judges by reference, as its user wrote them: a run in its plan's rewards
(`{judge: REF, weight}`), an evaluation in its `judge` field. A reference is the endpoint's id, or
the name of a live endpoint (names are per workload, shared/store/endpoint_names.py). Where the API
accepted it, the document keeps the workload the judge was found in (`judgeWorkloads`: ref ->
workload), and every later lookup of a name reads that workload only, as its user saw it.

What each service asks, in one place:
- the API, at submission: `find_judge` (by id or name, among the caller's workloads) and
  `accept_judge` (404 unknown, 422 ended: the refusals of `grpo.rewards.N.judge` and of an
  evaluation's `judge`, with the same sentences);
- the trainer worker, while scoring: `JudgeAddresses` (where a judge answers, read fresh each time)
  and `wait_until_ready` (an evaluation waits for a judge still QUEUED or STARTING);
- the endpoint manager, before an idle stop: `judge_in_use` (a run or evaluation that has not
  ended names the endpoint).

The protocol of asking a judge (the chat sent, the score parsed) is shared/rewards/functions.py's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from shared import reasons
from shared.errors import Conflict, NotFound, Unprocessable
from shared.lifecycle.states import EndpointPhase, EvaluationStatus, RunStatus
from shared.store.documents import Store
from shared.store.endpoint_names import find_endpoint

# Phases a judge may still leave for READY: waited for, not refused.
WAITABLE = frozenset({EndpointPhase.QUEUED, EndpointPhase.STARTING, EndpointPhase.READY})


# --- The references a document names


def judge_refs(doc: Mapping[str, Any]) -> dict[str, str | None]:
    """The judges a run or an evaluation names, each with the workload the API found it in (None in
    documents stored before that was recorded: then a name is matched in any workload)."""
    if doc.get("plan") is not None:  # a run: its plan's judge rewards
        from shared.plans import TrainingPlan

        refs = TrainingPlan.from_dict(doc["plan"]).judges
    else:  # an evaluation: its one judge
        refs = [doc["judge"]] if doc.get("judge") else []
    scopes = doc.get("judgeWorkloads") or {}
    return {ref: scopes.get(ref) for ref in refs}


def _has_ended(doc: Mapping[str, Any]) -> bool:
    statuses = RunStatus if doc.get("plan") is not None else EvaluationStatus
    try:
        return statuses(doc.get("status")).is_terminal
    except ValueError:  # not a run or evaluation status at all: nothing that can hold a judge
        return True


def names_judge(doc: Mapping[str, Any], endpoint: Mapping[str, Any]) -> bool:
    """True when a run or evaluation that has not ended names `endpoint` as a judge: by its id, or by
    its name in the workload the judge was found in."""
    if _has_ended(doc):
        return False
    for ref, scope in judge_refs(doc).items():
        if ref == endpoint["id"]:
            return True
        if ref == endpoint.get("name") and (scope or endpoint.get("workload")) == endpoint.get("workload"):
            return True
    return False


def judge_in_use(store: Store, endpoint: Mapping[str, Any]) -> bool:
    """True when a run or an evaluation that has not ended names the endpoint as a judge (SPEC 4:
    such an endpoint is not stopped for idleness). Reads the runs, then the evaluations."""
    runs, _ = store.list("run", where=lambda run: names_judge(run, endpoint), limit=1)
    if runs:
        return True
    evaluations, _ = store.list("eval", where=lambda evaluation: names_judge(evaluation, endpoint), limit=1)
    return bool(evaluations)


# --- At submission (the API)


def find_judge(store: Store, ref: str, *, workloads: Iterable[str] | None) -> dict[str, Any] | None:
    """The endpoint `ref` names (its id, or the name of a live endpoint) among `workloads` (None:
    every workload, an admin's), or None: another workload's endpoint reads as no endpoint. Conflict
    (409) when a name names live endpoints of several of them."""
    scope = None if workloads is None else list(workloads)
    doc = find_endpoint(store, ref, workloads=scope)
    return doc if doc is not None and (scope is None or doc.get("workload", "") in scope) else None


def accept_judge(doc: Mapping[str, Any] | None, ref: str, *, field: str) -> str:
    """Refuse a judge that is not an endpoint the caller may use (404) or has ended (422), naming
    `field`; return the workload it was found in, for the document's `judgeWorkloads`."""
    if doc is None:
        raise NotFound(reasons.judge_unknown(ref), details={"field": field})
    if EndpointPhase(doc["phase"]).is_terminal:
        raise Unprocessable(reasons.judge_ended(ref, doc["phase"]), details={"field": field})
    return doc["workload"]


# --- While scoring (the trainer worker)


class JudgeTarget(NamedTuple):
    """Where a judge answers and the model name to ask for: the name its serving process serves the
    endpoint under (the endpoint's id, as the base model's name or the adapter's)."""

    address: str
    model: str | None
    api_key: str | None = None  # its serving process's secret


def target_of(doc: Mapping[str, Any] | None) -> JudgeTarget | None:
    """Where a READY endpoint answers; None in any other phase or without an address."""
    if not doc or doc.get("phase") != EndpointPhase.READY or not doc.get("address"):
        return None
    served_as = doc.get("adapterName") or doc.get("servedModel") or doc["id"]  # as the API's proxy sends it
    return JudgeTarget(doc["address"].rstrip("/"), served_as, (doc.get("process") or {}).get("apiKey"))


@dataclass
class JudgeAddresses:
    """A document's judges, looked up fresh from Redis on every call (a judge may restart, and a name
    may pass to a new endpoint). Picklable: the ranks of a multi-device run unpickle their job, and
    connect to Redis on first use. Called with a ref: its `JudgeTarget` while READY, else None."""

    redis_url: str
    key_prefix: str
    # judge (an id or a name) -> the workload the API found it in: a name is looked up there only
    workloads: dict[str, str] = field(default_factory=dict)
    _store: Any = field(default=None, repr=False, compare=False)

    def __getstate__(self):
        return {"redis_url": self.redis_url, "key_prefix": self.key_prefix, "workloads": self.workloads,
                "_store": None}

    def store(self) -> Store:
        if self._store is None:
            from shared.store.keys import Keys
            from shared.store.redis_retry import connect_retrying

            self._store = Store(connect_retrying(self.redis_url), Keys(self.key_prefix))
        return self._store

    def find(self, ref: str) -> dict[str, Any] | None:
        """The endpoint `ref` names now (an id in any phase, a name only while live), or None."""
        scope = self.workloads.get(ref)
        try:
            doc = find_endpoint(self.store(), ref, workloads=[scope] if scope else None)
        except Conflict:  # a document stored before judges were scoped, whose judge's name two workloads use
            return None
        return None if doc is None or (scope and doc.get("workload") != scope) else doc

    def __call__(self, ref: str) -> JudgeTarget | None:
        return target_of(self.find(ref))


class JudgeNotReady(Exception):
    """A judge that ended, is gone, or was not READY in time: `phase` is its last phase ("gone": none)."""

    def __init__(self, ref: str, phase: str):
        super().__init__(ref, phase)
        self.ref, self.phase = ref, phase


def wait_until_ready(find: Callable[[str], Mapping[str, Any] | None], ref: str, *, wait_s: float, poll_s: float,
                     should_stop: Callable[[], bool] = lambda: False,
                     on_wait: Callable[[str], None] = lambda phase: None) -> JudgeTarget:
    """The judge's target once it is READY. One still QUEUED or STARTING (created together with what
    it judges, or restarting) is waited for up to `wait_s`, `on_wait(phase)` called once when the
    wait begins; JudgeNotReady when it has ended or is gone, when the time is up, or `should_stop()`."""
    deadline = time.monotonic() + wait_s
    announced = False
    while True:
        doc = find(ref) or {}
        target = target_of(doc)
        if target is not None:
            return target
        phase = doc.get("phase") or "gone"
        if phase not in WAITABLE or time.monotonic() >= deadline or should_stop():
            raise JudgeNotReady(ref, phase)
        if not announced:
            on_wait(phase)
            announced = True
        time.sleep(poll_s)
