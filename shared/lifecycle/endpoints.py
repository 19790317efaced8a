"""An endpoint's lifecycle: the rules over its stored facts that the endpoint manager, the scheduler
and the API all apply, so they never disagree on when an endpoint times out or idles.
"""

from __future__ import annotations

from typing import Any

from shared.states import EndpointPhase
from shared.times import epoch


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
