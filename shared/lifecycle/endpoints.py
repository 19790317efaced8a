"""An endpoint's phase (shared/lifecycle/states.py `EndpointPhase`) is derived from the facts stored on it,
as SkyPilot derives a replica's status, and written only here.

Writers record **facts**; `derive_phase` says what phase they make, and `record` stores the facts
with that phase once the state machine allows the edge:

| fact | recorded by | phase it makes |
|---|---|---|
| `stoppedAt` (+ `failed`, `detail`) | API (stop a QUEUED one), endpoint manager (stop, fail), scheduler (no manager within the start timeout) | TERMINATED, or FAILED when `failed` |
| `address` (+ `readyAt` the first time) | endpoint manager: its serving process answers | READY |
| `requeuedAt` (`startingSince`, `address`, `process` cleared) | scheduler: its node has no endpoint manager and another node has one (`requeued`) | QUEUED |
| `startingSince` | scheduler (grant), endpoint manager (process lost), scheduler (manager lost), API (a proxied request found the process gone, with `processLost`): `address` cleared | STARTING |
| none of those | API: create | QUEUED |

A terminal phase is final whatever is recorded later. The rules over the facts that more than one
service applies (start timeout, idle expiry, a process found lost) are here too.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from shared.errors import NotFound
from shared.lifecycle.core import Change
from shared.lifecycle.states import EndpointPhase, endpoint_transition
from shared.store.times import epoch, now_iso

FIELD = "phase"
GRANTED = frozenset({EndpointPhase.STARTING, EndpointPhase.READY})


def created() -> dict[str, Any]:
    """The phase and facts of a new endpoint: none recorded yet."""
    return {FIELD: EndpointPhase.QUEUED.value, "address": None, "startingSince": None, "stoppedAt": None,
            "failed": False, "detail": None}


def derive_phase(doc: dict[str, Any]) -> EndpointPhase:
    """The phase the endpoint's facts make (see the table above)."""
    stored = EndpointPhase(doc.get(FIELD) or EndpointPhase.QUEUED)
    if stored.is_terminal:
        return stored
    if doc.get("stoppedAt"):
        return EndpointPhase.FAILED if doc.get("failed") else EndpointPhase.TERMINATED
    if doc.get("address"):
        return EndpointPhase.READY
    if doc.get("requeuedAt") and not doc.get("startingSince"):
        return EndpointPhase.QUEUED  # moved off a node without a manager: it waits for a grant again
    # Granted once, an endpoint does not wait in the queue again unless it is moved (above): it keeps
    # its claim while it restarts.
    if doc.get("startingSince") or stored in GRANTED:
        return EndpointPhase.STARTING
    return EndpointPhase.QUEUED


def recorded(doc: dict[str, Any], **facts: Any) -> dict[str, Any]:
    """`doc` (a copy being changed inside a Store.update) with `facts` set and its phase derived
    from them; IllegalTransition when the state machine has no such edge."""
    doc.update(facts)
    phase = derive_phase(doc)
    if phase != doc.get(FIELD):
        doc[FIELD] = endpoint_transition(doc[FIELD], phase).value
    return doc


def ended(*, detail: str, failed: bool) -> dict[str, Any]:
    """The facts of an endpoint that stops: TERMINATED, or FAILED when `failed`."""
    return {"stoppedAt": now_iso(), "failed": failed, "detail": detail, "address": None}


def ready(doc: dict[str, Any], address: str) -> dict[str, Any]:
    """The facts of an endpoint whose serving process answers at `address`."""
    return {"address": address, "readyAt": doc.get("readyAt") or now_iso(), "processLost": None}


def restarting(since: str | None = None) -> dict[str, Any]:
    """The facts of an endpoint (re)starting its serving process: no address, its start timeout from now."""
    return {"address": None, "startingSince": since or now_iso(), "processLost": None, "requeuedAt": None}


# The most serving processes an endpoint remembers having left behind on nodes without a manager.
LEFT_BEHIND_MAX = 8


def requeued(doc: dict[str, Any], *, node: str, claim_id: str, at: str | None = None) -> dict[str, Any]:
    """The facts of an endpoint moved off `node`, whose endpoint manager is gone, to wait in the queue
    again under claim `claim_id` (QUEUED): no address, no process, no devices. The serving process it
    had there, which nobody on that node can stop now, is remembered in `leftBehind`; the node's next
    manager stops it (services/endpoint_manager/manager.py)."""
    process = doc.get("process") or {}
    left = list(doc.get("leftBehind") or [])
    if process.get("pid"):
        left = [*left, {"node": node, "pid": process["pid"], "startTicks": process.get("startTicks")}][-LEFT_BEHIND_MAX:]
    return {"address": None, "startingSince": None, "processLost": None, "requeuedAt": at or now_iso(),
            "process": None, "leftBehind": left, "managerMissingSince": None,
            "scheduling": {**(doc.get("scheduling") or {}), "claim": claim_id, "node": None, "devices": []}}


def process_gone(store: Any, seen: dict[str, Any]) -> dict[str, Any] | None:
    """A request through the trainer found the serving process of the READY endpoint `seen` gone:
    its connection was refused or reset (SPEC 6, "Outliving a restart"). Recorded as the endpoint
    manager records a lost process (back to STARTING, no address, its start timeout from now), plus
    `processLost` naming that process, so that later requests are refused at once and the manager
    starts another one (or sees this one answer again) instead of failing the endpoint for a process
    that "ended before it was ready".

    Only while the endpoint is still READY, under the same claim, with the same process, and no stop
    requested: a manager that got there first (it restarted or stopped it) stands. Returns the
    document as written, or None when nothing was."""
    process = seen.get("process") or {}
    identity = (process.get("pid"), process.get("startedAt"))

    def same_process(doc: dict[str, Any]) -> dict[str, Any] | None:
        current = doc.get("process") or {}
        if doc.get("stopRequested") or (current.get("pid"), current.get("startedAt")) != identity:
            return None
        return doc

    return record(store, seen["id"], expect={EndpointPhase.READY}, claim=(seen.get("scheduling") or {}).get("claim"),
                  change=same_process, **{**restarting(), "processLost": {"pid": process.get("pid"), "at": now_iso()}})


def process_lost(doc: dict[str, Any]) -> bool:
    """True when a request found the endpoint's recorded serving process gone (`process_gone`) and
    no process has been started or seen answering since: the endpoint manager restarts it rather
    than waiting for it to load, and does not count its end as a failure to start."""
    lost, process = doc.get("processLost") or {}, doc.get("process") or {}
    return lost.get("pid") is not None and lost.get("pid") == process.get("pid")


def record(store: Any, endpoint_id: str, *, expect: Iterable[EndpointPhase | str] | None = None,
           claim: str | None = None, change: Change | None = None, **facts: Any) -> dict[str, Any] | None:
    """One write of an endpoint's facts, its phase derived from them. Only while its phase is still
    one of `expect` and its scheduling names `claim` (each when given): else nothing is written and
    the answer is None (another writer came first), as for an endpoint that is gone. `change` gets
    the document after the facts are recorded. Returns the document as written."""
    wanted = None if expect is None else {str(p) for p in expect}
    written = False

    def write(doc: dict[str, Any]) -> dict[str, Any] | None:
        nonlocal written
        written = False
        if wanted is not None and doc.get(FIELD) not in wanted:
            return None
        if claim is not None and (doc.get("scheduling") or {}).get("claim") != claim:
            return None
        doc = recorded(doc, **facts)
        doc = change(doc) if change is not None else doc
        written = doc is not None
        return doc

    try:
        doc = store.update(endpoint_id, write)
    except NotFound:
        return None
    return doc if written else None


def idle_since(doc: dict[str, Any]) -> float | None:
    """The later of the last proxied request and the first time the trainer saw it answering."""
    return max(filter(None, (epoch(doc.get("lastRequestAt")), epoch(doc.get("readyAt")))), default=None)


def idle_expired(doc: dict[str, Any], now: float) -> bool:
    """READY, with an idle timeout, and no request for longer than it (judges not considered)."""
    timeout_s = doc.get("idleTimeout") or 0
    since = idle_since(doc)
    return (doc.get("phase") == EndpointPhase.READY and timeout_s > 0 and since is not None
            and now > since + timeout_s)


def start_timed_out(doc: dict[str, Any], now: float) -> bool:
    """STARTING (or restarting) for longer than its startTimeout, counted from `startingSince`."""
    since, timeout_s = epoch(doc.get("startingSince")), doc.get("startTimeout")
    return since is not None and timeout_s is not None and now - since > timeout_s
