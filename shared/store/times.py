"""Timestamps as every document stores them: ISO 8601 in UTC with milliseconds and a `Z`."""

from __future__ import annotations

from datetime import UTC, datetime


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def iso(epoch_s: float) -> str:
    """The stored form of a time given in seconds since the epoch."""
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def epoch(stamp: str | None) -> float | None:
    """Seconds since the epoch of a stored timestamp; None for none (or one that does not parse)."""
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except (TypeError, ValueError):
        return None
