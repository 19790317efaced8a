from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable, TextIO

import click
import yaml

from shared import reasons
from shared.plans.flags import FlagSpec, flag_spec
from shared.store.rollout_samples import SAMPLE_PAGE_MAX
from training_cli import samples_text, tables
from training_cli import short_ids as ids
from training_cli.archive import download_tensorboard
from training_cli.commands.common import list_options, list_params, say_or_emit
from training_cli.context import CliContext, pass_cli
from training_cli.errors import CliError
from training_cli.output import TABLES, dump, emit, emit_list, output_option
from training_cli.watch import follow_logs, watch_run

# flag -> where it goes in the plan (SPEC 2.3); flags override what -f FILE says. What each flag
# takes and its help are the plan schema's own declaration of the field (shared/plans/flags.py).
PLAN_FLAGS: dict[str, tuple[str, ...]] = {
    "method": ("method",),
    "model": ("model",),
    "dataset": ("dataset",),
    "validation_dataset": ("validationDataset",),
    "precision": ("precision",),
    "gpus": ("execution", "gpus"),
    "pool": ("execution", "pool"),
    "max_steps": ("hyperparameters", "maxSteps"),
    "epochs": ("hyperparameters", "epochs"),
    "learning_rate": ("hyperparameters", "learningRate"),
    "batch_size": ("hyperparameters", "batchSize"),
    "seed": ("hyperparameters", "seed"),
    "rank": ("adapter", "rank"),
    "kl_penalty": ("grpo", "klPenalty"),
    "snapshot_every": ("snapshots", "everySteps"),
    "workload": ("workload",),
    "name": ("name",),
}
BRANCH_FLAGS = ("gpus", "max_steps", "learning_rate", "dataset", "name")  # `runs branch` overrides these by flag
tag_option = click.option("--tag", "tags", multiple=True, metavar="TAG",
                          help="A tag to find it by (repeatable), e.g. --tag team=nlp --tag baseline.")


def flag_type(spec: FlagSpec) -> click.ParamType:
    """The click type of a plan field's flag: its choices, or its kind within its bounds."""
    if spec.choices:
        return click.Choice(list(spec.choices))
    if spec.kind in (int, float):
        bounded = click.IntRange if spec.kind is int else click.FloatRange
        return bounded(min=spec.minimum, max=spec.maximum, min_open=spec.min_open, max_open=spec.max_open)
    return click.STRING


def plan_option(flag: str, path: tuple[str, ...], *, dest: str | None = None, required: bool = False):
    """`--FLAG` for the plan field at `path`, as the schema declares the field."""
    spec = flag_spec(*path)
    kind = ids.DATASET if path[-1] in ("dataset", "validationDataset") else flag_type(spec)
    return click.option(f"--{flag.replace('_', '-')}", dest or flag, type=kind, required=required,
                        help=spec.help)


def plan_options(*flags: str):
    """One `plan_option` for each of `flags` (names of PLAN_FLAGS), in that order."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        for flag in reversed(flags):
            command = plan_option(flag, PLAN_FLAGS[flag])(command)
        return command

    return decorate


@click.group("runs")
def group() -> None:
    """Fine-tuning runs: create, inspect, watch, read logs, cancel."""


@group.command("create")
@click.option("-f", "--file", "body_file", type=click.File("r"), help="The request body (YAML or JSON; - for stdin).")
@plan_options(*PLAN_FLAGS)
@tag_option
@click.option("--set", "sets", multiple=True, metavar="PATH=VALUE",
              help="Any other plan field, e.g. --set hyperparameters.warmupSteps=5 (repeatable).")
@output_option
@pass_cli
def create(cli: CliContext, body_file: TextIO | None, sets: tuple[str, ...], tags: tuple[str, ...], fmt: str,
           **flags: Any) -> None:
    """Submit a run. The plan is -f FILE with the flags merged over it."""
    body = build_plan(body_file, flags, sets)
    if tags:
        body["tags"] = list(tags)
    run = cli.client.post("/v1/runs", body)
    emit(run, fmt, tables.run)
    if fmt in TABLES:
        say_steps(run)
        click.echo(f"\nfollow it: training runs watch {run.get('id')}", err=True)


def build_plan(body_file: TextIO | None, flags: dict[str, Any], sets: tuple[str, ...] = ()) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if body_file is not None:
        name = getattr(body_file, "name", "-")
        try:
            body = yaml.safe_load(body_file.read()) or {}  # YAML is a superset of JSON
        except yaml.YAMLError as exc:
            raise CliError(reasons.body_file_unreadable(name, str(exc))) from None
        if not isinstance(body, dict):
            raise CliError(reasons.run_file_not_a_mapping(name))
    for name, path in PLAN_FLAGS.items():
        if flags.get(name) is not None:
            _put(body, path, flags[name])
    for item in sets:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise CliError(reasons.set_flag_invalid(item))
        _put(body, tuple(key.split(".")), yaml.safe_load(raw))
    return body


def _put(body: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        if not isinstance(body.get(key), dict):
            body[key] = {}
        body = body[key]
    body[path[-1]] = value


@group.command("get")
@click.argument("run_id", metavar="[ID]", required=False, type=ids.RUN)
@list_options(labels=True)
@output_option
@pass_cli
def get(cli: CliContext, run_id: str | None, fmt: str, **filters: Any) -> None:
    """List runs (newest first), or show one."""
    if run_id:
        emit(cli.client.get(f"/v1/runs/{run_id}"), fmt, tables.run)
    else:
        emit_list(cli.client.get("/v1/runs", list_params(**filters)), fmt, tables.runs, "runs")


@group.command("delete")
@click.argument("run_id", metavar="ID", type=ids.RUN)
@output_option
@pass_cli
def delete(cli: CliContext, run_id: str, fmt: str) -> None:
    """Cancel a run (its GPUs are released; its snapshots stay)."""
    run = cli.client.delete(f"/v1/runs/{run_id}")
    detail = f" ({run['detail']})" if run.get("detail") else ""
    say_or_emit(run, fmt, f"run {run.get('id', run_id)}: {run.get('status')}{detail}", tables.run)


@group.command("watch")
@click.argument("run_id", metavar="ID", type=ids.RUN)
@pass_cli
def watch(cli: CliContext, run_id: str) -> None:
    """Live progress until the run ends or is paused; exit code 0 if it SUCCEEDED, else 1."""
    run = watch_run(cli.client, run_id)
    click.echo(f"run {run_id}: {run.get('status')}" + (f": {run['detail']}" if run.get("detail") else ""))
    if run.get("status") == "PAUSED":
        click.echo(f"`training runs resume {run_id}` continues it from its training state")
    sys.exit(0 if run.get("status") == "SUCCEEDED" else 1)


# -o json|yaml with -f: one document per event, printed as it arrives.
EVENT_STREAM: dict[str, Callable[[dict[str, Any]], None]] = {
    "json": lambda event: click.echo(json.dumps(event)),
    "yaml": lambda event: click.echo(yaml.safe_dump(event, sort_keys=False, allow_unicode=True, explicit_start=True),
                                     nl=False),
}


@group.command("logs")
@click.argument("run_id", metavar="ID", type=ids.RUN)
@click.option("-f", "--follow", is_flag=True, help="Keep printing new events until the run ends or is paused.")
@click.option("--process", is_flag=True,
              help="Print the run's process log instead: what its libraries logged, its events and metric points, "
                   "each rank's output and, when it failed, the traceback (the last 1 MiB of each worker process "
                   "that trained it).")
@output_option
@pass_cli
def logs(cli: CliContext, run_id: str, follow: bool, process: bool, fmt: str) -> None:
    """The run's events: TIME LEVEL MESSAGE.

    -o json / -o yaml print the events ({time, level, message}) as one list; with -f they print
    each event as it comes instead: -o json one JSON object a line (JSONL), -o yaml one YAML
    document each (a `---` stream). --process prints the run's process log as text (redirect it to
    a file to keep it)."""
    if process:
        if follow:
            raise click.UsageError(reasons.PROCESS_LOG_NOT_FOLLOWED)
        click.echo(cli.client.text(f"/v1/runs/{run_id}/process-log"), nl=False)
        return
    if not follow and fmt not in TABLES:
        emit(cli.client.log_items(f"/v1/runs/{run_id}/events"), fmt, tables.events)
        return
    follow_logs(cli.client, run_id, follow=follow, show=EVENT_STREAM.get(fmt))


@group.command("metrics")
@click.argument("run_id", metavar="ID", type=ids.RUN)
@click.option("--last", type=click.IntRange(min=1), metavar="N", help="Only the last N points.")
@output_option
@pass_cli
def metrics(cli: CliContext, run_id: str, last: int | None, fmt: str) -> None:
    """The run's metrics, one row per logged point (training steps and validation passes).

    The table's columns are the keys the points carry (loss, learningRate, validationLoss, reward,
    kl, ...); -o json / -o yaml print the points as the API answers them (with each one's time),
    as one list."""
    points = cli.client.log_items(f"/v1/runs/{run_id}/metrics")
    if last is not None:
        points = points[-last:]
    if fmt in TABLES and not points:
        click.echo(f"run {run_id} has logged no metrics yet")
        return
    emit(points, fmt, tables.metrics)


@group.command("samples")
@click.argument("run_id", metavar="ID")
@click.option("--step", type=click.IntRange(min=1), metavar="N", help="Only step N (404 if the run keeps none).")
@click.option("--last", type=click.IntRange(1, SAMPLE_PAGE_MAX), default=1, show_default=True, metavar="N",
              help="Without --step: the latest N steps kept.")
@output_option
@pass_cli
def samples(cli: CliContext, run_id: str, step: int | None, last: int, fmt: str) -> None:
    """A grpo run's rollout samples: per step the first prompt groups with their completions, each
    one's weighted reward, advantage and each reward's score (texts shortened to one line; -o json
    / -o yaml print them as stored, each cut at 1,000 characters). A run keeps its last 200 steps."""
    params = {"step": step} if step is not None else {"limit": last}
    items = cli.client.get(f"/v1/runs/{run_id}/samples", params)["items"]
    if fmt != "table":
        dump(items, fmt)
    elif not items:
        click.echo(reasons.samples_none_yet(run_id))
    else:
        click.echo(samples_text.render(items))


@group.command("download-logs")
@click.argument("run_id", metavar="ID", type=ids.RUN)
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False, path_type=Path), default=".")
@pass_cli
def download_logs(cli: CliContext, run_id: str, directory: Path) -> None:
    """Write the run's TensorBoard event files into DIR/ID (DIR: here by default) and print that path;
    `tensorboard --logdir DIR` then shows every run downloaded into DIR. Works while it runs too."""
    click.echo(str(download_tensorboard(cli.client, run_id, directory)))


@group.command("pause")
@click.argument("run_id", metavar="ID", type=ids.RUN)
@output_option
@pass_cli
def pause(cli: CliContext, run_id: str, fmt: str) -> None:
    """Pause a run: it writes a snapshot with training state and gives its GPUs back."""
    run = cli.client.post(f"/v1/runs/{run_id}/pause", {})
    say_or_emit(run, fmt, f"run {run_id}: pause requested; it writes a snapshot and becomes PAUSED "
                          f"(training runs resume {run_id} continues it)", tables.run)


@group.command("resume")
@click.argument("run_id", metavar="ID", type=ids.RUN)
@output_option
@pass_cli
def resume(cli: CliContext, run_id: str, fmt: str) -> None:
    """Queue a PAUSED run again; it continues exactly where it stopped."""
    run = cli.client.post(f"/v1/runs/{run_id}/resume", {})
    say_or_emit(run, fmt, f"run {run_id}: {run.get('status')}; it continues from its pause snapshot", tables.run)


def branch_plan(parent_plan: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """The parent's plan with the overrides merged in, key by key (SPEC 2.4)."""
    merged = {k: v for k, v in parent_plan.items() if k not in ("restore",)}
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = branch_plan(merged[key], value)
        else:
            merged[key] = value
    return merged


@group.command("branch")
@click.argument("snapshot_id", metavar="SNAPSHOT", type=ids.SNAPSHOT)
@plan_option("restore", ("restore", "what"), dest="what", required=True)
@click.option("-f", "--file", "body_file", type=click.File("r"), help="Plan overrides (YAML or JSON).")
@plan_options(*BRANCH_FLAGS)
@tag_option
@click.option("--set", "sets", multiple=True, metavar="PATH=VALUE", help="Any other plan field (repeatable).")
@output_option
@pass_cli
def branch(cli: CliContext, snapshot_id: str, what: str, body_file: TextIO | None, sets: tuple[str, ...],
           tags: tuple[str, ...], fmt: str, **flags: Any) -> None:
    """Start a run from a snapshot: the parent's plan with the overrides applied.

    --max-steps is the step the run ends at, on its own step count. A weights branch counts from 0
    (--max-steps 50 trains 50 steps); a trainingState branch continues the snapshot's step count
    (from a snapshot of step 100, --max-steps 150 trains 50 steps, and 100 or less is refused).
    The run's stepRange says how many steps it trains."""
    snapshot = cli.client.get(f"/v1/snapshots/{snapshot_id}")
    parent_plan: dict[str, Any] = {"model": snapshot.get("model"), "method": snapshot.get("method"),
                                   "precision": snapshot.get("precision")}
    if snapshot.get("run"):
        parent_plan = cli.client.get(f"/v1/runs/{snapshot['run']}").get("plan") or parent_plan
    overrides = build_plan(body_file, flags, sets)
    body = branch_plan(parent_plan, overrides)
    body["restore"] = {"snapshot": snapshot_id, "what": what}
    body["tags"] = list(tags) if tags else body.get("tags", [])
    run = cli.client.post("/v1/runs", body)
    emit(run, fmt, tables.run)
    if fmt in TABLES:
        say_steps(run)
        click.echo(f"\nfollow it: training runs watch {run.get('id')}", err=True)


def say_steps(run: dict[str, Any]) -> None:
    """How many steps a new run trains, from which step to which (its stepRange), on stderr."""
    steps = run.get("stepRange") or {}
    if isinstance(steps.get("newSteps"), int):
        click.echo(reasons.run_trains_steps(new_steps=steps["newSteps"], start_step=steps.get("startStep") or 0,
                                            end_step=steps.get("endStep"), estimated=bool(steps.get("estimated"))),
                   err=True)
