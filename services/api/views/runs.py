"""Runs: create, list, get, cancel (DELETE), pause, resume, events, metrics, rollout samples, the process
log, TensorBoard event files."""

from __future__ import annotations

from pathlib import PurePosixPath

from flask import Blueprint, Response, request, send_file

from services.api import runs as service
from services.api.archives import tar_gz
from services.api.auth import principal
from services.api.context import ctx
from services.api.paging import (
    MAX_LOG_INDEX,
    both,
    id_prefix_filter,
    label_filter,
    log_page,
    page,
    page_args,
    visible_cursor,
    visible_filter,
    whole_number_arg,
)
from services.api.run_samples import samples_page
from services.api.scheduling import with_waits
from services.api.schemas import (
    EventSchema,
    MetricPointSchema,
    RunSchema,
    SampleStepSchema,
    log_page_schema,
    page_schema,
    serialise,
)
from services.api.views import json_object_body
from shared import reasons
from shared.errors import Conflict
from shared.lifecycle.states import RunStatus
from shared.store.artifacts import tensorboard_key
from shared.store.ids import Kind
from shared.store.process_logs import process_log
from shared.store.rollout_samples import SAMPLE_PAGE_DEFAULT, SAMPLE_PAGE_MAX

bp = Blueprint("runs", __name__)


@bp.post("/v1/runs")
def create_run():
    return serialise(RunSchema, service.create_run(ctx(), body=json_object_body(), who=principal())), 201


@bp.get("/v1/runs")
def list_runs():
    limit, after = page_args(Kind.RUN)
    items, cursor = ctx().store.list("run", where=visible_filter(both(label_filter(), id_prefix_filter(Kind.RUN)), what="runs",
                                                                    statuses=RunStatus), limit=limit,
                                     after=after, cursor_visible=visible_cursor())
    return serialise(page_schema(RunSchema), page(with_waits(ctx(), items, principal()), cursor))


@bp.get("/v1/runs/<run_id>")
def get_run(run_id: str):
    return serialise(RunSchema, with_waits(ctx(), [service.get_run(ctx(), run_id)], principal())[0])


@bp.delete("/v1/runs/<run_id>")
def cancel_run(run_id: str):
    return serialise(RunSchema, service.cancel_run(ctx(), run_id))


@bp.post("/v1/runs/<run_id>/pause")
def pause_run(run_id: str):
    return serialise(RunSchema, service.pause_run(ctx(), run_id))


@bp.post("/v1/runs/<run_id>/resume")
def resume_run(run_id: str):
    return serialise(RunSchema, service.resume_run(ctx(), run_id))


@bp.get("/v1/runs/<run_id>/events")
def run_events(run_id: str):
    service.get_run(ctx(), run_id)
    events = log_page(lambda start: ctx().store.events(run_id, start=start))
    return serialise(log_page_schema(EventSchema), events)


@bp.get("/v1/runs/<run_id>/metrics")
def run_metrics(run_id: str):
    service.get_run(ctx(), run_id)
    points = log_page(lambda start: ctx().store.metrics(run_id, start=start))
    return serialise(log_page_schema(MetricPointSchema), points)


@bp.get("/v1/runs/<run_id>/process-log")
def run_process_log(run_id: str):
    """The run's own process output (issue 30): its libraries' log lines, events, metric points and,
    on failure, the traceback, of each worker process that trained it (shared/store/process_logs.py)."""
    service.get_run(ctx(), run_id)  # another workload's run answers as an unknown one
    text = process_log(ctx().artifacts, run_id)
    if text is None:  # the run exists: its log is empty so far, and says why in its one line
        text = reasons.run_has_no_process_log(run_id) + "\n"
    return Response(text, mimetype="text/plain", headers={
        "Content-Disposition": f'inline; filename="{run_id}-process.log"'})


@bp.get("/v1/runs/<run_id>/samples")
def run_samples(run_id: str):
    """A grpo run's rollout samples: one step's (?step=N) or a page of the latest steps."""
    service.get_run(ctx(), run_id)
    step = whole_number_arg("step", request.args.get("step"), low=1, high=MAX_LOG_INDEX)
    limit = whole_number_arg("limit", request.args.get("limit"), low=1, high=SAMPLE_PAGE_MAX,
                             default=SAMPLE_PAGE_DEFAULT)
    after = whole_number_arg("after", request.args.get("after"), low=1, high=MAX_LOG_INDEX)
    samples = samples_page(ctx(), run_id, step=step, limit=limit, after=after)
    return serialise(page_schema(SampleStepSchema), samples)


@bp.get("/v1/runs/<run_id>/tensorboard")
def run_tensorboard(run_id: str):
    """The run's TensorBoard event files as a .tar.gz (one file per attempt), while it runs too."""
    service.get_run(ctx(), run_id)
    folder = tensorboard_key(run_id)
    keys = [k for k in ctx().artifacts.list(folder)
            if PurePosixPath(k).parent == PurePosixPath(folder) and ".tfevents." in PurePosixPath(k).name]
    if not keys:  # the run is there, its files not yet: 409, as an evaluation's rows before it ends
        raise Conflict(reasons.run_has_no_tensorboard_events(run_id), details={"id": run_id})
    buffer = tar_gz(ctx().artifacts, [(key, PurePosixPath(key).name) for key in keys])
    return send_file(buffer, mimetype="application/gzip", as_attachment=True,
                     download_name=f"{run_id}-tensorboard.tar.gz")
