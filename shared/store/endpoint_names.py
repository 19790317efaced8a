"""Finding an endpoint the way users name it: its id, or the name of a live one (SPEC 2.6).

A name belongs to a workload: it is unique among the live endpoints (not TERMINATED or FAILED) of
its workload, and two workloads may each have an endpoint of the same name, so that nothing about
another workload's endpoints shows through a name. Who looks a name up sees only the endpoints of
the workloads it may use (`workloads`: theirs, or None for all, an admin's); when that leaves
several, the name is ambiguous and the endpoint's id must be used.

The index: one hash per workload, `endpoint-name-index:WORKLOAD`, name -> the id of the endpoint
of that workload last created with the name. It is written in the transaction that creates the
endpoint (`create_endpoint_doc`, which also refuses a name a live endpoint of the workload holds),
so it is never behind a document. An endpoint that ends keeps its entry, which then reads as no
endpoint (a lookup checks the document), until an endpoint created with the name replaces it; no
endpoint is ever deleted or renamed. A lookup reads, in one Lua script (one round trip), the
name's entry in each hash of the workloads it may use and the documents they name: a name that is
known, unknown, or another workload's costs the same, and never a scan of the endpoints (which
made an unknown name 4x slower than a known one: a timing oracle, issue 26).

Stores written before the index (a set `endpoint-names:NAME` of hints, and endpoints older than
that) are indexed from the documents once, by `ensure_name_index`, which each process runs before
its first lookup or creation by name (a version key marks a store done).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from typing import Any

from shared import reasons
from shared.errors import Conflict
from shared.lifecycle.states import EndpointPhase
from shared.process import logs
from shared.store.documents import Store
from shared.store.transactions import transact

INDEX_VERSION = "1"
# (Redis client, key prefix) whose index this process has seen built: checked once per process
_ensured: set[tuple[int, str]] = set()

# KEYS: the name-index hashes to read (none: every workload's, from the workloads set ARGV[4]).
# ARGV: the name, the prefix of resource keys, the prefix of index keys, the workloads set key.
# Returns the documents the entries name, as stored (JSON), in the order of the hashes read.
_LOOKUP = """
local keys = KEYS
if #keys == 0 then
  keys = {}
  for _, workload in ipairs(redis.call('SMEMBERS', ARGV[4])) do
    table.insert(keys, ARGV[3] .. workload)
  end
end
local found = {}
for _, key in ipairs(keys) do
  local id = redis.call('HGET', key, ARGV[1])
  if id then
    local doc = redis.call('GET', ARGV[2] .. id)
    if doc then table.insert(found, doc) end
  end
end
return found
"""


def _is_live_named(doc: dict[str, Any] | None, name: str) -> bool:
    return bool(doc) and doc.get("kind") == "endpoint" and doc.get("name") == name and not EndpointPhase(
        doc["phase"]).is_terminal


def _lookup_args(store: Store, name: str, workloads: list[str] | None) -> list[Any]:
    keys = store.keys
    if workloads is not None and not workloads:
        raise ValueError("a lookup in no workload reads nothing; the script would read every workload")
    hashes = [] if workloads is None else [keys.endpoint_name_index(w) for w in sorted(set(workloads))]
    return [_LOOKUP, len(hashes), *hashes, name, keys.resource(""), keys.endpoint_name_index(""),
            keys.endpoint_name_workloads()]


def _live(raws: list[Any], name: str, workloads: Iterable[str] | None) -> list[dict[str, Any]]:
    allowed = None if workloads is None else set(workloads)
    docs = [json.loads(raw) for raw in raws]
    return sorted((d for d in docs if _is_live_named(d, name) and (allowed is None or d.get("workload") in allowed)),
                  key=lambda d: d.get("createdAt") or "")


def live_named(store: Store, name: str, *, workloads: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """The live endpoints with this name in `workloads` (None: every workload), oldest first."""
    scope = None if workloads is None else list(workloads)
    if scope == []:  # a token of no workload: nothing (the script would read "no hashes" as all)
        return []
    _ensure_once(store)
    return _live(store.redis.eval(*_lookup_args(store, name, scope)), name, scope)


def named_in_workload(store: Store, name: str, workload: str) -> dict[str, Any] | None:
    """The live endpoint of `workload` with this name, or None: a new endpoint may not take it."""
    found = live_named(store, name, workloads=[workload])
    return found[0] if found else None


def _one(name: str, found: list[dict[str, Any]]) -> dict[str, Any] | None:
    if len(found) > 1:
        workloads = sorted({d.get("workload", "") for d in found})
        raise Conflict(reasons.endpoint_name_ambiguous(name, workloads),
                       details={"name": name, "workloads": workloads})
    return found[0] if found else None


def find_endpoint(store: Store, id_or_name: str, *, workloads: Iterable[str] | None = None) -> dict[str, Any] | None:
    """The endpoint with this id (in any phase), or the one live endpoint with this name among
    `workloads` (None: every workload); None otherwise; Conflict when the name names several.
    (An id is returned whatever its workload: the caller checks who may see it.)"""
    if id_or_name.startswith("ep-"):
        doc = store.get(id_or_name)
        return doc if doc and doc.get("kind") == "endpoint" else None
    return _one(id_or_name, live_named(store, id_or_name, workloads=workloads))


async def find_endpoint_async(client, store: Store, id_or_name: str, *,
                              workloads: Iterable[str] | None = None) -> dict[str, Any] | None:
    """`find_endpoint` for the API's asyncio proxy: the same reads over `client` (a
    `redis.asyncio.Redis` with decoded responses on the store's Redis)."""
    if id_or_name.startswith("ep-"):
        raw = await client.get(store.keys.resource(id_or_name))
        doc = json.loads(raw) if raw else None
        return doc if doc and doc.get("kind") == "endpoint" else None
    scope = None if workloads is None else list(workloads)
    if scope == []:
        return None
    if (id(store.redis), store.keys.prefix) not in _ensured:
        await asyncio.to_thread(_ensure_once, store)
    raws = await client.eval(*_lookup_args(store, id_or_name, scope))
    return _one(id_or_name, _live(raws, id_or_name, scope))


def name_taken(name: str, holder: dict[str, Any]) -> Conflict:
    return Conflict(reasons.endpoint_name_taken(name, holder["id"], holder["phase"]),
                    details={"field": "name", "endpoint": holder["id"]})


def create_endpoint_doc(store: Store, doc: dict[str, Any]) -> dict[str, Any]:
    """Store a new endpoint document and, when it has a name, its entry in its workload's name
    index, in one transaction; Conflict (409, the field `name`) when a live endpoint of the
    workload holds the name, however close two such creations come."""
    name, workload = doc.get("name"), doc["workload"]
    if not name:
        return store.create(doc)
    _ensure_once(store)
    index = store.keys.endpoint_name_index(workload)

    def write(pipe) -> dict[str, Any]:
        holder_id = pipe.hget(index, name)
        raw = pipe.get(store.keys.resource(holder_id)) if holder_id else None
        holder = json.loads(raw) if raw else None
        if _is_live_named(holder, name) and holder.get("workload") == workload:
            raise name_taken(name, holder)
        pipe.multi()
        created = store.create_in(pipe, doc)
        pipe.hset(index, name, doc["id"])
        pipe.sadd(store.keys.endpoint_name_workloads(), workload)
        return created

    return transact(store.redis, write, index)


def _ensure_once(store: Store) -> None:
    mark = (id(store.redis), store.keys.prefix)
    if mark not in _ensured:
        ensure_name_index(store)
        _ensured.add(mark)


def ensure_name_index(store: Store) -> bool:
    """Index the endpoints of a store written before the name index (once: a version key marks it
    done) and drop the hint sets those releases kept. True when it rebuilt. Safe beside running
    APIs: an entry is written only where none names a live endpoint of the name already."""
    keys = store.keys
    if store.redis.get(keys.endpoint_name_index_version()) == INDEX_VERSION:
        return False
    newest: dict[tuple[str, str], dict[str, Any]] = {}
    after = None
    while True:
        page, after = store.list("ep", where=lambda d: bool(d.get("name")) and _is_live_named(d, d["name"]),
                                 limit=200, after=after)
        for doc in page:  # newest first: the first seen of a (workload, name) is kept
            newest.setdefault((doc.get("workload", ""), doc["name"]), doc)
        if after is None:
            break
    for (workload, name), doc in newest.items():
        _index_if_free(store, workload, name, doc["id"])
    legacy = list(store.redis.scan_iter(match=keys.legacy_endpoint_names("*"), count=1000))
    if legacy:
        store.redis.delete(*legacy)
    store.redis.set(keys.endpoint_name_index_version(), INDEX_VERSION)
    if newest or legacy:
        logs.get("endpoint-names").info("endpoint name index built from the documents", names=len(newest),
                                        legacy_keys=len(legacy))
    return True


def _index_if_free(store: Store, workload: str, name: str, endpoint_id: str) -> None:
    index = store.keys.endpoint_name_index(workload)

    def write(pipe) -> None:
        current = pipe.hget(index, name)
        raw = pipe.get(store.keys.resource(current)) if current and current != endpoint_id else None
        if raw and _is_live_named(json.loads(raw), name):
            return  # indexed already (an endpoint created since the rebuild began)
        pipe.multi()
        pipe.hset(index, name, endpoint_id)
        pipe.sadd(store.keys.endpoint_name_workloads(), workload)

    transact(store.redis, write, index)
