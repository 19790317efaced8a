"""Endpoints: create (queue a claim), read (derive stopsAt and what a queued one waits on),
stop, serving log (SPEC 2.6, 6). Requests proxied to them: proxy.py."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any, Callable

from services.api.auth import Principal, principal, require_workload, visible
from services.api.branches import readable_of, require_intact, snapshot_for
from services.api.claims import give_back_places, queue_for_devices, reserve_places
from services.api.context import Context
from shared import reasons
from shared.artifacts import UnsafeKey
from shared.claims.fits import pool_named, refuse_never_granted
from shared.config import DEFAULT_WORKLOADS
from shared.endpoint_names import create_endpoint_doc, find_endpoint, name_taken, named_in_workload
from shared.endpoint_schema import parse_endpoint
from shared.errors import Conflict, NotFound, TrainerError, Unprocessable, ValidationFailed
from shared.ids import Kind, new_id
from shared.model_facts import refuse_unusable
from shared.lifecycle import endpoints as endpoint_lifecycle
from shared.states import EndpointPhase


def create_endpoint(context: Context, *, body: Any, who: Principal) -> dict[str, Any]:
    spec = parse_endpoint(body)
    workload = _naming("workload", require_workload,
                       spec["workload"] or who.default_workload(DEFAULT_WORKLOADS["endpoint"]))
    entry = _naming("model", context.catalog.check_loadable, spec["model"])  # 404 not in the catalog, 400 not in the hub cache
    refuse_unusable(context.catalog.describe(entry))  # 422: an architecture the engines do not know
    pool_name = spec["pool"] or context.config.default_pool
    pool = pool_named(context.config, pool_name, field="pool")  # 404
    if spec["snapshot"]:
        snap = snapshot_for(context, spec["snapshot"], who, field="snapshot")
        if not readable_of(snap)["weights"]:
            raise Unprocessable(reasons.WEIGHTS_UNREADABLE, details={"field": "snapshot"})
        if snap.get("model") != spec["model"]:
            raise Unprocessable(reasons.branch_other_model(snapshot_id=snap["id"], snapshot_model=snap.get("model"),
                                                           plan_model=spec["model"]), details={"field": "snapshot"})
        require_intact(context, snap, "weights", field="snapshot")  # not after it got GPUs
    if spec["name"]:
        taken = named_in_workload(context.store, spec["name"], workload)  # names are per workload
        if taken:  # said before a place is reserved; create_endpoint_doc holds the name atomically
            raise name_taken(spec["name"], taken)
    refuse_never_granted(pool, kind="endpoint", gpus=spec["gpus"], workload=workload)  # 422
    claims = context.claims(checked=True)
    (claim_id,) = reserve_places(context, workload=workload)  # 429 past the workload's cap, nothing stored
    endpoint_id = new_id(Kind.ENDPOINT)
    fields = {
        "id": endpoint_id, "kind": "endpoint", "name": spec["name"], "tags": spec["tags"], "workload": workload,
        "model": spec["model"], "snapshot": spec["snapshot"], "gpus": spec["gpus"], "pool": pool_name,
        "idleTimeout": spec["idleTimeout"], "startTimeout": spec["startTimeout"],
        **endpoint_lifecycle.created(),
        # Its serving process answers to the endpoint's id: the base model's name when it serves
        # the base, the adapter's when it serves a snapshot (then the base goes by the catalog id).
        "lastRequestAt": None, "readyAt": None, "servedModel": spec["model"] if spec["snapshot"] else endpoint_id,
        "adapterName": endpoint_id if spec["snapshot"] else None, "stopRequested": False, "process": None,
        "scheduling": {"claim": None, "pool": pool_name, "node": None, "devices": []},
    }
    try:  # stored with its name in its workload's name index, in one transaction
        doc = create_endpoint_doc(context.store, fields)
    except BaseException:  # its name taken a moment ago by another request: the place is given back
        give_back_places(context, workload=workload, claim_ids=[claim_id])
        raise
    return queue_for_devices(context, doc, kind="endpoint", claims=claims, model=spec["model"], claim_id=claim_id,
                             event=reasons.claim_queued(pool=pool_name, gpus=spec["gpus"], device_kind=pool.device_kind))


def _naming(field: str, check: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`check(...)`, its refusal naming the endpoint's field it is about: the checks are shared with
    runs, whose fields have other names, or name none."""
    try:
        return check(*args, **kwargs)
    except TrainerError as exc:
        if isinstance(exc.details, dict):
            exc.details = {**exc.details, "field": field}
        raise


def get_endpoint(context: Context, id_or_name: str) -> dict[str, Any]:
    """The endpoint with this id (any phase), or the live one with this name, as requests through
    the proxy name it (shared/endpoint_names.py); 404 when this token may not see it."""
    return visible(find_endpoint(context.store, id_or_name, workloads=principal().name_scope), "endpoint", id_or_name)


def _epoch(stamp: str | None) -> datetime | None:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else None


def with_stops_at(doc: dict[str, Any]) -> dict[str, Any]:
    """stopsAt is derived: while READY with an idle timeout, the last request (or first answer)
    plus the timeout. Nothing else writes it. A timeout no date can hold (stored before the
    schema bounded it) shows no stopsAt rather than failing every read of the endpoint."""
    stops_at = None
    if doc.get("phase") == EndpointPhase.READY and doc.get("idleTimeout"):
        last = max(filter(None, (_epoch(doc.get("lastRequestAt")), _epoch(doc.get("readyAt")))), default=None)
        if last is not None:
            try:
                stamp = (last + timedelta(seconds=doc["idleTimeout"])).astimezone(UTC)
                stops_at = stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")
            except (OverflowError, TypeError):
                stops_at = None
    return {**doc, "stopsAt": stops_at}


def stop_endpoint(context: Context, id_or_name: str) -> dict[str, Any]:
    endpoint_id = get_endpoint(context, id_or_name)["id"]
    released: list[str] = []

    def stop(doc: dict[str, Any]) -> dict[str, Any]:
        phase = EndpointPhase(doc["phase"])
        if phase.is_terminal:
            raise Conflict(reasons.endpoint_already_stopped(endpoint_id, phase), details={"phase": phase})
        if phase == EndpointPhase.QUEUED:
            endpoint_lifecycle.recorded(doc, **endpoint_lifecycle.ended(detail=reasons.ENDPOINT_STOPPED_BY_USER,
                                                                        failed=False))
            released.append((doc.get("scheduling") or {}).get("claim"))
        else:
            doc["stopRequested"] = True  # the endpoint manager stops its process and ends it
        return doc

    doc = context.store.update(endpoint_id, stop)
    for claim_id in filter(None, released):
        context.claims().release(claim_id)
    context.store.add_event(endpoint_id, reasons.ENDPOINT_STOP_REQUESTED)
    return doc


LOG_LINES_DEFAULT, LOG_LINES_MAX = 100, 10_000
_TAIL_BLOCK_BYTES = 64 * 1024


def _tail(f, lines: int) -> list[str]:
    """The last `lines` lines of an open file, reading backwards by blocks (a serving log grows for
    as long as the endpoint lives; only its end is read)."""
    with f:
        end = f.seek(0, os.SEEK_END)
        data, start = b"", end
        while start > 0 and data.count(b"\n") <= lines:
            start = max(0, start - _TAIL_BLOCK_BYTES)
            f.seek(start)
            data = f.read(end - start)
    text = data.decode("utf-8", errors="replace").splitlines()
    return text[-lines:]


def endpoint_log(context: Context, id_or_name: str, *, lines: Any) -> dict[str, Any]:
    """The tail of the endpoint's serving log (`process.log`, under the artifact root), whatever
    its phase, for as long as the file exists."""
    doc = get_endpoint(context, id_or_name)
    endpoint_id = doc["id"]
    try:
        count = LOG_LINES_DEFAULT if lines is None else int(lines)
    except (TypeError, ValueError):
        count = -1
    if not 1 <= count <= LOG_LINES_MAX:
        raise ValidationFailed(reasons.endpoint_log_lines_invalid(LOG_LINES_MAX),
                               details={"field": "lines", "value": lines})
    relative = (doc.get("process") or {}).get("log")
    try:
        log = context.artifacts.open(relative) if relative else None
    except (FileNotFoundError, IsADirectoryError, UnsafeKey):
        log = None
    if log is None:
        raise NotFound(reasons.endpoint_log_missing(endpoint_id, doc["phase"]),
                       details={"endpoint": endpoint_id, "phase": doc["phase"]})
    return {"endpoint": endpoint_id, "phase": doc["phase"], "log": relative, "lines": _tail(log, count)}
