"""Finding an endpoint the way users name it: its id, or the name of a live one (SPEC 2.6).

A name belongs to a workload: it is unique among the live endpoints (not TERMINATED or FAILED) of
its workload, and two workloads may each have an endpoint of the same name, so that nothing about
another workload's endpoints shows through a name. Who looks a name up sees only the endpoints of
the workloads it may use (`may_use`); when that leaves several (an admin token, or a token of two
workloads that both use the name), the name is ambiguous and the endpoint's id must be used.

`endpoint-names:NAME` (a set written at creation) finds the candidates with one read (the API's
proxy does this per request, a grpo run per judged batch); its members are only hints, checked
against their documents, and the index scan answers when none is live, so no writer ever has to
remove a member (lookups drop the stale ones they meet).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from shared import reasons
from shared.errors import Conflict
from shared.states import EndpointPhase
from shared.store import Store

MayUse = Callable[[str], bool]


def _anyone(workload: str) -> bool:
    return True


def _is_live_named(doc: dict[str, Any] | None, name: str) -> bool:
    return bool(doc) and doc.get("kind") == "endpoint" and doc.get("name") == name and not EndpointPhase(
        doc["phase"]).is_terminal


def remember_name(store: Store, name: str, endpoint_id: str) -> None:
    """Record a new endpoint under its name (a hint for the lookups below)."""
    store.redis.sadd(store.keys.endpoint_names(name), endpoint_id)


def live_named(store: Store, name: str, *, may_use: MayUse = _anyone) -> list[dict[str, Any]]:
    """The live endpoints with this name in workloads `may_use` allows, oldest first."""
    key = store.keys.endpoint_names(name)
    hinted = sorted(store.redis.smembers(key))
    docs = dict(zip(hinted, store.get_many_or_none(hinted)))
    stale = [i for i, doc in docs.items() if not _is_live_named(doc, name)]
    if stale:
        store.redis.srem(key, *stale)
    live = [doc for doc in docs.values() if _is_live_named(doc, name)]
    if not live:  # endpoints created before names had this set, or a lost hint
        live = _scan_for_live_named(store, name)
    return _visible(live, may_use)


def _visible(docs: list[dict[str, Any]], may_use: MayUse) -> list[dict[str, Any]]:
    return sorted((d for d in docs if may_use(d.get("workload", ""))), key=lambda d: d.get("createdAt") or "")


def _scan_for_live_named(store: Store, name: str) -> list[dict[str, Any]]:
    found, _ = store.list("ep", where=lambda d: _is_live_named(d, name), limit=1000)
    return found


def named_in_workload(store: Store, name: str, workload: str) -> dict[str, Any] | None:
    """The live endpoint of `workload` with this name, or None: a new endpoint may not take it."""
    found = live_named(store, name, may_use=lambda w: w == workload)
    return found[0] if found else None


def _one(name: str, found: list[dict[str, Any]]) -> dict[str, Any] | None:
    if len(found) > 1:
        workloads = sorted({d.get("workload", "") for d in found})
        raise Conflict(reasons.endpoint_name_ambiguous(name, workloads),
                       details={"name": name, "workloads": workloads})
    return found[0] if found else None


def find_endpoint(store: Store, id_or_name: str, *, may_use: MayUse = _anyone) -> dict[str, Any] | None:
    """The endpoint with this id (in any phase), or the one live endpoint with this name among the
    workloads `may_use` allows; None otherwise; Conflict when the name names several of them.
    (An id is returned whatever its workload: the caller checks who may see it.)"""
    if id_or_name.startswith("ep-"):
        doc = store.get(id_or_name)
        return doc if doc and doc.get("kind") == "endpoint" else None
    return _one(id_or_name, live_named(store, id_or_name, may_use=may_use))


async def find_endpoint_async(client, store: Store, id_or_name: str, *,
                              may_use: MayUse = _anyone) -> dict[str, Any] | None:
    """`find_endpoint` for the API's asyncio proxy: the same reads over `client` (a
    `redis.asyncio.Redis` with decoded responses on the store's Redis); the index scan, needed
    only when no hinted endpoint is live, runs in a thread over the store."""
    if id_or_name.startswith("ep-"):
        doc = await _get_async(client, store, id_or_name)
        return doc if doc and doc.get("kind") == "endpoint" else None
    hinted = sorted(await client.smembers(store.keys.endpoint_names(id_or_name)))
    raws = await client.mget([store.keys.resource(i) for i in hinted]) if hinted else []
    live = [doc for doc in (json.loads(r) if r else None for r in raws) if _is_live_named(doc, id_or_name)]
    if not live:
        live = await asyncio.to_thread(_scan_for_live_named, store, id_or_name)
    return _one(id_or_name, _visible(live, may_use))


async def _get_async(client, store: Store, resource_id: str) -> dict[str, Any] | None:
    raw = await client.get(store.keys.resource(resource_id))
    return json.loads(raw) if raw else None
