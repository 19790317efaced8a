"""A worker asked to stop gives its work back (issue 26; docs/faults.md, "Worker and training").

SIGTERM is how a worker is stopped: `training down` (the local stack's supervisor signals the
worker's whole process group), `docker compose stop/restart` (the container's main process only),
systemd (the whole control group). Before, Celery's warm shutdown waited for a task that the
signal had already killed (a pool child dies of SIGTERM), the message came back, and the task
delivered after the restart failed its run (`a run cannot go from RUNNING to RUNNING`). Now:

- **the main process** (Celery's `worker_shutting_down`, `on_worker_shutting_down`) drops the
  node's heartbeat, so the scheduler grants nothing more here (a run given back goes to another
  live node, or waits for this one), and sends SIGTERM on to every pool process that runs a task,
  so that a signal to the main process alone (a container's) reaches the training too;
- **the pool process running a task** (`ChildStop`, installed by the task) hears SIGTERM through
  a wakeup pipe: at once, even in the middle of a long step (a Python handler would wait for the
  main thread's next bytecode). A run is asked to stop at its next step boundary with a snapshot
  (its reporter answers "pause"), an evaluation stops before its next row, and each is then given
  back by its task: QUEUED keeping its place, through `shared.claims.orphans.give_back`, as a lost
  worker's runs are; the run resumes from that snapshot, the evaluation scores every row again.
  Whatever is not given back within `worker.stopGraceS` (6 s: below the 10 s that the supervisor
  and docker compose wait before SIGKILL), or at once when there is nothing to wait for (a run
  still loading, or with no step since its last snapshot), is given back by the watchdog (a run
  without a new snapshot), and the process ends (`os._exit`); Celery's main process then finishes
  its warm shutdown. The message of a process that ended so comes back to the queue and is
  skipped later: its claim is no longer granted.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from shared import reasons
from shared.claims.orphans import give_back

# How a pool process that the watchdog ended exits: Celery logs it and re-queues its message,
# which finds its claim gone when delivered again.
EXIT_CODE = 0


@dataclass
class Held:
    """The work a task holds: how to give it back now, and whether to wait (up to the grace) for
    it to stop and give itself back first: a run with steps to save, an evaluation between rows."""

    hand_back: Callable[[bool], Any]  # given True when the grace ran out first
    stops_itself: Callable[[], bool]
    # what to write first (a run's throttled progress: the run then reads the step its snapshot holds)
    before_hand_back: Callable[[], Any] | None = None


class ChildStop:
    """The stop request of one pool process (one task each: max-tasks-per-child 1)."""

    def __init__(self, *, grace_s: float, log: Any = None, exit: Callable[[int], None] = os._exit):
        self.grace_s = grace_s
        self.log = log
        self.requested = threading.Event()
        self.finished = threading.Event()  # the task ended its work (or gave it back) itself
        self._exit = exit
        self._lock = threading.Lock()  # the task's final writes, or the watchdog's give-back: never both
        self._held: Held | None = None
        self._watchdog: threading.Thread | None = None

    def hold(self, held: Held) -> None:
        self._held = held

    def stops_itself(self, when: Callable[[], bool]) -> None:
        """Where the held work says when it stops by itself at a stop request (see Held)."""
        if self._held is not None:
            self._held.stops_itself = when

    def writes_first(self, write: Callable[[], Any]) -> None:
        """What the watchdog writes before it gives the held work back (see Held)."""
        if self._held is not None:
            self._held.before_hand_back = write

    def done(self) -> None:
        """The task's work has ended (or was given back): the watchdog leaves the process alone."""
        self.finished.set()

    @contextmanager
    def ending(self) -> Iterator[None]:
        """Around the task's own final writes (the run ended, or given back), so that a stop
        arriving then does not give back work that is ending; the watchdog leaves it alone after."""
        with self._lock:
            try:
                yield
            finally:
                self.finished.set()

    def request(self) -> None:
        """SIGTERM: ask the work to stop, and make sure it is given back within the grace."""
        if self.requested.is_set():
            return
        self.requested.set()
        self._watchdog = threading.Thread(target=self._watch, name="stop-watchdog", daemon=True)
        self._watchdog.start()

    def _watch(self) -> None:
        held = self._held
        waited = held is not None and held.stops_itself()
        if self.finished.wait(self.grace_s if waited else 0.0):
            return
        with self._lock:
            if self.finished.is_set():
                return
            if self._held is not None:
                try:
                    if self._held.before_hand_back is not None:
                        self._held.before_hand_back()
                    self._held.hand_back(waited)
                except Exception as exc:  # Redis away: the scheduler's lost-worker pass re-queues it
                    if self.log is not None:
                        self.log.error("could not give the work back before stopping", error=repr(exc))
            self._exit(EXIT_CODE)


class _NeverStopped(ChildStop):
    """Outside a pool process (tests, tools): nothing ever asks to stop."""

    def __init__(self):
        super().__init__(grace_s=0.0)

    def request(self) -> None:  # pragma: no cover - never signalled
        raise RuntimeError(reasons.NO_STOP_HANDLING)


_current: ChildStop = _NeverStopped()


def current() -> ChildStop:
    return _current


def use(stop: ChildStop) -> ChildStop:
    """Make `stop` this process's stop request (tests use it without signals)."""
    global _current
    _current = stop
    return stop


def install_in_child(*, grace_s: float, log: Any = None) -> ChildStop:
    """In a pool process, at the start of its task: SIGTERM from now on requests a stop. The signal
    is read from the interpreter's wakeup pipe by a thread of its own, so it is acted on at once."""
    stop = use(ChildStop(grace_s=grace_s, log=log))
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    signal.signal(signal.SIGTERM, lambda *_: None)  # a Python handler, so the C one writes the pipe
    signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)

    def listen() -> None:
        while True:
            try:
                data = os.read(read_fd, 64)
            except OSError:
                return
            if not data:
                return
            if signal.SIGTERM in data:
                stop.request()

    threading.Thread(target=listen, name="sigterm-listener", daemon=True).start()
    return stop


def on_worker_shutting_down(heartbeat: Any, log: Any, *, grace_s: float | None = None) -> None:
    """In the worker's main process, when Celery starts its shutdown (SIGTERM, SIGINT, SIGQUIT):
    pass SIGTERM on to every pool process that runs a task (Celery's own record of its active
    requests, and the process that accepted each) and drop the node's heartbeat (see the module),
    saying for `grace_s` that this node's work is being given back by its worker (heartbeat.py).
    Called inside Celery's signal handler: only the kill is done here, the rest in a thread."""
    from celery.worker import state

    pids = sorted({r.worker_pid for r in list(state.active_requests) if r.worker_pid})
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass

    def then() -> None:
        if heartbeat is not None:
            heartbeat.stop(giving_back_s=grace_s)
        log.info("stopping: SIGTERM passed on to the pool processes that run a task, the node's heartbeat dropped",
                 processes=pids)

    threading.Thread(target=then, name="worker-stopping", daemon=True).start()


def hand_back(worker, claim: dict[str, Any], lease, log, *, late: bool = False) -> str | None:
    """Give the claim's run or evaluation back because this worker is stopping: QUEUED keeping its place, through the one way back (shared/claims/orphans.py). `late`: the
    watchdog gives it back, the grace over (a run: with steps its snapshot does not hold)."""
    if late and claim["kind"] == "run":
        worker.store.add_event(claim["resource"], reasons.worker_stopped_unsaved(current().grace_s),
                               level="warn")
    outcome = give_back(worker.claims(), worker.store, claim,
                        requeued_event=reasons.worker_stopped_requeued(worker.node),
                        cancelled_detail=reasons.worker_stopped_cancelled(worker.node), log=log)
    lease.release()  # at once: the next holder must not take this process for a dead one
    return outcome
