"""What every lifecycle module does with a status: one function moves a document along its state
machine (shared/lifecycle/states.py), stamps when it started or ended, and refuses a stale writer.

A **stale writer** is one whose decision was made on a document that has moved on since:
- a worker whose fence (taken with its lease) is not the one the document carries: another
  worker owns the run now. That is an error (`StaleWriter`): the worker must stop touching it.
- a writer that expected another state (the scheduler dispatching a run the user cancelled, an
  endpoint manager acting on a phase another manager changed) or another claim (work that was
  re-queued under a new claim meanwhile). That is not an error: the change is dropped and `move`
  answers None, because someone else's change came first and stands.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from shared.errors import NotFound
from shared.store.times import now_iso

Change = Callable[[dict[str, Any]], "dict[str, Any] | None"]


class StaleWriter(Exception):
    """The document carries another fence than the writer's: the writer lost it to another worker."""


def fenced(change: Change, *, fence: int | None, what: str) -> Change:
    """`change`, applied only while the document still carries `fence` (else StaleWriter, nothing written)."""

    def apply(doc: dict[str, Any]) -> dict[str, Any] | None:
        if doc.get("fence") != fence:
            raise StaleWriter(f"{what} now belongs to fence {doc.get('fence')}")
        return change(doc)

    return apply


@dataclass(frozen=True)
class Lifecycle:
    """The status of one resource kind: its field, its states and their edges, and its stamps."""

    kind: str  # as users read it: "run", "evaluation", "endpoint"
    field: str  # the document field holding the state: "status" or "phase"
    states: type[StrEnum]
    transition: Callable[[Any, Any], StrEnum]  # shared.lifecycle.states: returns the target or raises IllegalTransition
    initial: StrEnum
    started_field: str | None = None  # stamped the first time it enters `running`
    running: StrEnum | None = None
    ended_field: str = "finishedAt"  # stamped when it enters a terminal state

    def created(self) -> dict[str, Any]:
        """The state fields of a new document."""
        return {self.field: self.initial.value}

    def state(self, doc: dict[str, Any]) -> StrEnum:
        return self.states(doc[self.field])

    def apply(self, doc: dict[str, Any], target: StrEnum | str, **fields: Any) -> dict[str, Any]:
        """Move `doc` (a copy being changed inside a Store.update) to `target` if its state machine has
        that edge (else IllegalTransition), set `fields`, and stamp the start or the end."""
        target = self.transition(doc[self.field], target)
        doc[self.field] = target.value
        doc.update(fields)
        if target is self.running and self.started_field:
            doc[self.started_field] = doc.get(self.started_field) or now_iso()
        if target.is_terminal and self.ended_field not in fields:
            doc[self.ended_field] = now_iso()
        return doc

    def move(
        self,
        store: Any,
        resource_id: str,
        target: StrEnum | str | Callable[[dict[str, Any]], StrEnum | str | None],
        *,
        expect: Iterable[StrEnum | str] | None = None,
        claim: str | None = None,
        fence: int | None = None,
        change: Change | None = None,
        **fields: Any,
    ) -> dict[str, Any] | None:
        """One write: move the stored document to `target` with `fields` (and `change` applied after).
        `target` may be a function of the stored document (None: leave it as it is).

        Only while it is still in one of `expect` (when given) and its scheduling still names
        `claim` (when given); otherwise nothing is written and the answer is None, as it is for a
        document that is gone. With `fence`, a document stamped with another fence raises
        StaleWriter. Returns the document as written.
        """
        wanted = None if expect is None else {str(s) for s in expect}
        moved = False

        def move(doc: dict[str, Any]) -> dict[str, Any] | None:
            nonlocal moved
            moved = False
            if wanted is not None and doc.get(self.field) not in wanted:
                return None
            if claim is not None and (doc.get("scheduling") or {}).get("claim") != claim:
                return None
            to = target(doc) if callable(target) else target
            if to is None:
                return None
            doc = self.apply(doc, to, **fields)
            doc = change(doc) if change is not None else doc
            moved = doc is not None
            return doc

        write = fenced(move, fence=fence, what=f"{self.kind} {resource_id}") if fence is not None else move
        try:
            doc = store.update(resource_id, write)
        except NotFound:
            return None
        return doc if moved else None
