"""Finding an endpoint the way users name it: its id, or the name of a live one (SPEC 2.6).

Names are unique among live endpoints (not TERMINATED or FAILED). The `endpoint-name:NAME` key
written at creation finds one with a single read (the API's proxy does this per request, a grpo
run per judged batch); the key is only a hint, checked against the document, and the index scan
answers when it is missing or stale, so no writer ever has to delete it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from shared.states import EndpointPhase
from shared.store import Store


def _is_live_named(doc: dict[str, Any] | None, name: str) -> bool:
    return bool(doc) and doc.get("kind") == "endpoint" and doc.get("name") == name and not EndpointPhase(
        doc["phase"]).is_terminal


def live_named(store: Store, name: str) -> dict[str, Any] | None:
    """The live endpoint with this name, or None."""
    hinted = store.redis.get(store.keys.endpoint_name(name))
    if hinted:
        doc = store.get(hinted.decode() if isinstance(hinted, bytes) else hinted)
        if _is_live_named(doc, name):
            return doc
    return _scan_for_live_named(store, name)


def _scan_for_live_named(store: Store, name: str) -> dict[str, Any] | None:
    found, _ = store.list("ep", where=lambda d: _is_live_named(d, name), limit=1)
    return found[0] if found else None


def find_endpoint(store: Store, id_or_name: str) -> dict[str, Any] | None:
    """The endpoint with this id (in any phase), or the live one with this name; None otherwise."""
    doc = store.get(id_or_name) if id_or_name.startswith("ep-") else live_named(store, id_or_name)
    return doc if doc and doc.get("kind") == "endpoint" else None


async def find_endpoint_async(client, store: Store, id_or_name: str) -> dict[str, Any] | None:
    """`find_endpoint` for the API's asyncio proxy: the same reads over `client` (a
    `redis.asyncio.Redis` with decoded responses on the store's Redis); the index scan, needed
    only when the name hint is missing or stale, runs in a thread over the store."""
    if id_or_name.startswith("ep-"):
        doc = await _get_async(client, store, id_or_name)
    else:
        hinted = await client.get(store.keys.endpoint_name(id_or_name))
        doc = await _get_async(client, store, hinted) if hinted else None
        if not _is_live_named(doc, id_or_name):
            doc = await asyncio.to_thread(_scan_for_live_named, store, id_or_name)
    return doc if doc and doc.get("kind") == "endpoint" else None


async def _get_async(client, store: Store, resource_id: str) -> dict[str, Any] | None:
    raw = await client.get(store.keys.resource(resource_id))
    return json.loads(raw) if raw else None
