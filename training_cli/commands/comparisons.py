"""`training comparisons create|get`: several snapshots (a parent and its branches) scored side by side."""

from __future__ import annotations

from typing import Any, TextIO

import click

from training_cli import short_ids as ids
from training_cli import tables
from training_cli.commands.common import list_options, list_params
from training_cli.commands.evaluations import read_body
from training_cli.context import CliContext, pass_cli
from training_cli.output import TABLES, emit, emit_list, output_option


@click.group("comparisons")
def group() -> None:
    """Branch comparisons: one evaluation per snapshot on the same data, one row each, the best marked."""


@group.command("create")
@click.argument("snapshots", metavar="[SNAPSHOT]...", nargs=-1, type=ids.SNAPSHOT)
@click.option("-f", "--file", "body_file", type=click.File("r"), help="The request body (YAML or JSON; - for stdin).")
@click.option("--dataset", type=ids.DATASET, help="Dataset id every snapshot is scored on.")
@click.option("--pool", help="Pool its evaluations queue in.")
@click.option("--max-tokens", type=click.IntRange(min=1), help="Most tokens of each greedy completion.")
@click.option("--workload", help="The quota group of its evaluations (default: evaluations).")
@click.option("--base", is_flag=True, default=None,
              help="Also score the base model without an adapter, as a row of its own (then one SNAPSHOT will do).")
@output_option
@pass_cli
def create(cli: CliContext, snapshots: tuple[str, ...], body_file: TextIO | None, fmt: str,
           dataset: str | None, pool: str | None, max_tokens: int | None, workload: str | None,
           base: bool | None) -> None:
    """Compare snapshots on one dataset (SNAPSHOT arguments, or `snapshots` in -f FILE), and the base model with --base."""
    body = read_body(body_file, "comparison")
    if snapshots:
        body["snapshots"] = list(snapshots)
    flags = {"dataset": dataset, "pool": pool, "maxTokens": max_tokens, "workload": workload, "base": base}
    body.update({k: v for k, v in flags.items() if v is not None})
    comparison = cli.client.post("/v1/comparisons", body)
    emit(comparison, fmt, tables.comparison)
    if fmt in TABLES:
        click.echo(f"\nthe table as it fills: training comparisons get {comparison.get('id')}", err=True)


@group.command("get")
@click.argument("comparison_id", metavar="[ID]", required=False, type=ids.COMPARISON)
@list_options()
@output_option
@pass_cli
def get(cli: CliContext, comparison_id: str | None, fmt: str, **filters: Any) -> None:
    """List comparisons (newest first), or show one side by side."""
    if comparison_id:
        emit(cli.client.get(f"/v1/comparisons/{comparison_id}"), fmt, tables.comparison)
    else:
        emit_list(cli.client.get("/v1/comparisons", list_params(**filters)), fmt, tables.comparisons, "comparisons")


@group.command("delete")
@click.argument("comparison_id", metavar="ID", type=ids.COMPARISON)
@output_option
@pass_cli
def delete(cli: CliContext, comparison_id: str, fmt: str) -> None:
    """Cancel a comparison: every evaluation of it that has not ended."""
    emit(cli.client.delete(f"/v1/comparisons/{comparison_id}"), fmt, tables.comparison)
