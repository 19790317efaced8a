from __future__ import annotations

import functools
from typing import Any, TextIO

import click
import yaml

from shared import reasons
from training_cli import short_ids as ids
from training_cli import tables
from training_cli.commands.common import list_options, list_params, say_or_emit
from training_cli.context import CliContext, pass_cli
from training_cli.errors import CliError
from training_cli.output import TABLES, dump, emit, emit_list, output_option

# flag -> field of the request body (SPEC 7); flags override what -f FILE says.
BODY_FLAGS = {"model": "model", "snapshot": "snapshot", "name": "name", "gpus": "gpus", "pool": "pool",
              "idle_timeout": "idleTimeout", "start_timeout": "startTimeout", "workload": "workload"}


@click.group("endpoints")
def group() -> None:
    """Endpoints: serve a base model, or a snapshot's adapter over it, behind an OpenAI-compatible API."""


@group.command("create")
@click.option("-f", "--file", "body_file", type=click.File("r"), help="The request body (YAML or JSON; - for stdin).")
@click.option("--model", help="Base-model id.")
@click.option("--snapshot", type=ids.SNAPSHOT, help="Serve this snapshot's adapter over the model.")
@click.option("--name", help="A name requests may use as `model` instead of the id.")
@click.option("--gpus", type=click.IntRange(min=1), help="GPUs of one node.")
@click.option("--pool", help="Pool to queue in.")
@click.option("--idle-timeout", type=click.IntRange(min=0), help="Seconds without a request before it stops (0 = never).")
@click.option("--start-timeout", type=click.IntRange(min=1), help="Seconds it may take to become READY.")
@click.option("--workload", help="The quota group it counts against.")
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="A tag to find it by (repeatable).")
@output_option
@pass_cli
def create(cli: CliContext, body_file: TextIO | None, tags: tuple[str, ...], fmt: str, **flags: Any) -> None:
    """Start an endpoint; it queues for GPUs like a run."""
    body: dict[str, Any] = {}
    if body_file is not None:
        try:
            body = yaml.safe_load(body_file.read()) or {}
        except yaml.YAMLError as exc:
            raise CliError(reasons.body_file_unreadable(getattr(body_file, "name", "-"), str(exc))) from None
        if not isinstance(body, dict):
            raise CliError(reasons.body_file_not_a_mapping("endpoint"))
    body.update({field: flags[flag] for flag, field in BODY_FLAGS.items() if flags.get(flag) is not None})
    if tags:
        body["tags"] = list(tags)
    endpoint = cli.client.post("/v1/endpoints", body)
    emit(endpoint, fmt, tables.endpoint)
    if fmt in TABLES:
        click.echo(f"\nits phase: training endpoints get {endpoint.get('id')}", err=True)


@group.command("get")
@click.argument("endpoint_id", metavar="[ID|NAME]", required=False, type=ids.ENDPOINT)
@list_options(labels=True)
@output_option
@pass_cli
def get(cli: CliContext, endpoint_id: str | None, fmt: str, **filters: Any) -> None:
    """List endpoints (newest first), or show one (by its id, or a live one by its name)."""
    if endpoint_id:
        emit(cli.client.get(f"/v1/endpoints/{endpoint_id}"), fmt,
             functools.partial(tables.endpoint, api_url=cli.settings.api_url.value))
    else:
        emit_list(cli.client.get("/v1/endpoints", list_params(**filters)), fmt, tables.endpoints, "endpoints")


@group.command("delete")
@click.argument("endpoint_id", metavar="ID|NAME", type=ids.ENDPOINT)
@output_option
@pass_cli
def delete(cli: CliContext, endpoint_id: str, fmt: str) -> None:
    """Stop an endpoint (its GPUs are released)."""
    endpoint = cli.client.delete(f"/v1/endpoints/{endpoint_id}")
    state = "stopping" if endpoint.get("stopRequested") else str(endpoint.get("phase"))
    say_or_emit(endpoint, fmt, f"endpoint {endpoint.get('id', endpoint_id)}: {state}", tables.endpoint)


@group.command("logs")
@click.argument("endpoint_id", metavar="ID|NAME", type=ids.ENDPOINT)
@click.option("--lines", "-n", type=click.IntRange(min=1, max=10_000), default=100, show_default=True,
              help="How many of the last lines to show.")
@output_option
@pass_cli
def logs(cli: CliContext, endpoint_id: str, lines: int, fmt: str) -> None:
    """The tail of the endpoint's serving-process log (whatever its phase), as it was written.

    -o json / -o yaml print the API's answer: {endpoint, phase, log, lines}."""
    answer = cli.client.get(f"/v1/endpoints/{endpoint_id}/logs", {"lines": lines})
    if fmt not in TABLES:
        dump(answer, fmt)
        return
    for line in answer.get("lines") or []:
        click.echo(line)
