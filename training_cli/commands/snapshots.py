from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from training_cli import tables
from training_cli.archive import download_adapter
from training_cli.commands.common import list_options, list_params
from training_cli.context import CliContext, pass_cli
from training_cli.output import emit, emit_list, output_option


@click.group("snapshots")
def group() -> None:
    """Snapshots written by runs: list, inspect, download their adapters."""


@group.command("get")
@click.argument("snapshot_id", metavar="[ID]", required=False)
@list_options(status=False, run="snapshots")
@output_option
@pass_cli
def get(cli: CliContext, snapshot_id: str | None, fmt: str, **filters: Any) -> None:
    """List snapshots (of one run with --run), or show one."""
    if snapshot_id:
        emit(cli.client.get(f"/v1/snapshots/{snapshot_id}"), fmt, tables.snapshot)
    else:
        emit_list(cli.client.get("/v1/snapshots", list_params(**filters)), fmt, tables.snapshots, "snapshots")


@group.command("download")
@click.argument("snapshot_id", metavar="ID")
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
@pass_cli
def download(cli: CliContext, snapshot_id: str, directory: Path) -> None:
    """Write the snapshot's adapter (PEFT format) into DIR and print its path."""
    click.echo(str(download_adapter(cli.client, snapshot_id, directory)))


@group.command("import")
@click.argument("path", metavar="PATH", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--workload", help="The workload the snapshot belongs to.")
@output_option
@pass_cli
def import_(cli: CliContext, path: Path, workload: str | None, fmt: str) -> None:
    """Register a snapshot directory written elsewhere (release 0.5, another deployment).

    The API reads PATH on its own machine (the artifact root is shared), checks its manifest and
    records which of its parts this deployment can read."""
    body: dict[str, Any] = {"path": str(path.resolve())}
    if workload:
        body["workload"] = workload
    emit(cli.client.post("/v1/snapshots/import", body), fmt, tables.snapshot)
