"""`training evaluations create|get|delete|rows|logs`: score a base model or a snapshot's adapter on a dataset."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, TextIO

import click
import yaml

from shared import reasons
from training_cli import short_ids as ids
from training_cli import tables
from training_cli.commands.common import list_options, list_params, say_or_emit
from training_cli.context import CliContext, pass_cli
from training_cli.errors import CliError
from training_cli.output import TABLES, emit, emit_list, output_option

# flag -> field of the request body (SPEC 7); flags override what -f FILE says.
BODY_FLAGS = {"model": "model", "snapshot": "snapshot", "dataset": "dataset", "gpus": "gpus", "pool": "pool",
              "judge": "judge", "workload": "workload", "max_tokens": "maxTokens"}


def read_body(body_file: TextIO | None, what: str) -> dict[str, Any]:
    """The request body of `-f FILE` (YAML or JSON; - for stdin), or an empty one."""
    if body_file is None:
        return {}
    try:
        body = yaml.safe_load(body_file.read()) or {}
    except yaml.YAMLError as exc:
        raise CliError(reasons.body_file_unreadable(getattr(body_file, "name", "-"), str(exc))) from None
    if not isinstance(body, dict):
        raise CliError(reasons.body_file_not_a_mapping(what))
    return body


@click.group("evaluations")
def group() -> None:
    """Evaluations: loss, perplexity, exact match, rewards and a judge's score of a model on a dataset."""


@group.command("create")
@click.option("-f", "--file", "body_file", type=click.File("r"), help="The request body (YAML or JSON; - for stdin).")
@click.option("--model", help="Base-model id.")
@click.option("--snapshot", type=ids.SNAPSHOT, help="Score this snapshot's adapter over the model.")
@click.option("--dataset", type=ids.DATASET, help="Dataset id.")
@click.option("--gpus", type=click.IntRange(min=1), help="GPUs of one node.")
@click.option("--pool", help="Pool to queue in.")
@click.option("--judge", help="An endpoint (its id or name) that grades each completion.")
@click.option("--max-tokens", type=click.IntRange(min=1), help="Most tokens of each greedy completion.")
@click.option("--workload", help="The quota group it counts against (default: evaluations).")
@output_option
@pass_cli
def create(cli: CliContext, body_file: TextIO | None, fmt: str, **flags: Any) -> None:
    """Score a model on a dataset; it queues for GPUs like a run."""
    body = read_body(body_file, "evaluation")
    body.update({field: flags[flag] for flag, field in BODY_FLAGS.items() if flags.get(flag) is not None})
    evaluation = cli.client.post("/v1/evaluations", body)
    emit(evaluation, fmt, tables.evaluation)
    if fmt in TABLES:
        click.echo(f"\nits status: training evaluations get {evaluation.get('id')}", err=True)


@group.command("get")
@click.argument("evaluation_id", metavar="[ID]", required=False, type=ids.EVALUATION)
@click.option("--comparison", help="Only the evaluations of this comparison.")
@list_options(run="evaluations")
@output_option
@pass_cli
def get(cli: CliContext, evaluation_id: str | None, fmt: str, **filters: Any) -> None:
    """List evaluations (newest first), or show one."""
    if evaluation_id:
        emit(cli.client.get(f"/v1/evaluations/{evaluation_id}"), fmt, tables.evaluation)
    else:
        emit_list(cli.client.get("/v1/evaluations", list_params(**filters)), fmt, tables.evaluations, "evaluations")


@group.command("delete")
@click.argument("evaluation_id", metavar="ID", type=ids.EVALUATION)
@output_option
@pass_cli
def delete(cli: CliContext, evaluation_id: str, fmt: str) -> None:
    """Cancel an evaluation (a queued one at once, a running one between rows)."""
    evaluation = cli.client.delete(f"/v1/evaluations/{evaluation_id}")
    state = ("cancelling" if evaluation.get("cancelRequested") and evaluation.get("status") != "CANCELLED"
             else str(evaluation.get("status")))
    say_or_emit(evaluation, fmt, f"evaluation {evaluation.get('id', evaluation_id)}: {state}", tables.evaluation)


@group.command("rows")
@click.argument("evaluation_id", metavar="ID", type=ids.EVALUATION)
@click.option("--out", "out", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
              help="Write the JSONL as the API serves it here (- for stdout) instead of printing it.")
@output_option
@pass_cli
def rows(cli: CliContext, evaluation_id: str, out: Path | None, fmt: str) -> None:
    """The per-row results of a SUCCEEDED evaluation.

    The table cuts the texts short; -o json / -o yaml print every row whole, as one list;
    --out FILE writes the JSONL file as it is (one JSON object a line)."""
    path = f"/v1/evaluations/{evaluation_id}/rows"
    if out is not None and str(out) != "-":
        cli.client.download(path, out)
        click.echo(f"wrote {out}", err=True)
        return
    with tempfile.TemporaryDirectory() as tmp:
        jsonl = cli.client.download(path, Path(tmp) / "rows.jsonl").read_text()
    if out is not None:
        click.echo(jsonl, nl=False)
        return
    items = [json.loads(line) for line in jsonl.splitlines() if line.strip()]
    if fmt in TABLES and not items:
        click.echo("no rows found")
        return
    emit(items, fmt, tables.evaluation_rows)


@group.command("logs")
@click.argument("evaluation_id", metavar="ID", type=ids.EVALUATION)
@output_option
@pass_cli
def logs(cli: CliContext, evaluation_id: str, fmt: str) -> None:
    """The evaluation's events: TIME LEVEL MESSAGE (-o json / -o yaml: the events as one list)."""
    emit(cli.client.log_items(f"/v1/evaluations/{evaluation_id}/events"), fmt, tables.events)
