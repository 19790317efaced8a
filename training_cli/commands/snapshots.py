from __future__ import annotations

import tarfile
import tempfile
from pathlib import Path
from typing import Any

import click

from shared import reasons
from training_cli import short_ids as ids
from training_cli import tables
from training_cli.archive import download_adapter
from training_cli.commands.common import list_options, list_params
from training_cli.context import CliContext, pass_cli
from training_cli.errors import CliError
from training_cli.output import emit, emit_list, output_option

MANIFEST_FILE = "snapshot.json"  # services/trainer_worker/engines/base.py; the CLI does not import the engines


@click.group("snapshots")
def group() -> None:
    """Snapshots written by runs: list, inspect, download their adapters."""


@group.command("get")
@click.argument("snapshot_id", metavar="[ID]", required=False, type=ids.SNAPSHOT)
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
@click.argument("snapshot_id", metavar="ID", type=ids.SNAPSHOT)
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
@pass_cli
def download(cli: CliContext, snapshot_id: str, directory: Path) -> None:
    """Write the snapshot's adapter (PEFT format) into DIR and print its path."""
    click.echo(str(download_adapter(cli.client, snapshot_id, directory)))


@group.command("import")
@click.argument("path", metavar="PATH")
@click.option("--workload", help="The workload the snapshot belongs to.")
@click.option("--on-server", is_flag=True,
              help="PATH is a directory on the API's machine (a shared filesystem), under one of the deployment's "
                   "snapshotImportRoots: it is copied there, not uploaded. Admin tokens only.")
@output_option
@pass_cli
def import_(cli: CliContext, path: str, workload: str | None, on_server: bool, fmt: str) -> None:
    """Register a snapshot directory written elsewhere (release 0.5, another deployment).

    PATH is uploaded as a tar archive (this machine need not share a filesystem with the
    deployment); the API checks its manifest and records which of its parts this deployment can
    read."""
    if on_server:
        body: dict[str, Any] = {"path": path, **({"workload": workload} if workload else {})}
        emit(cli.client.post("/v1/snapshots/import", body), fmt, tables.snapshot)
        return
    directory = Path(path).expanduser()
    if not (directory / MANIFEST_FILE).is_file():
        raise CliError(reasons.import_dir_without_manifest(str(directory), MANIFEST_FILE))
    with tempfile.TemporaryDirectory(prefix="training-import-") as tmp:
        archive = Path(tmp) / f"{directory.resolve().name}.tar"
        top = directory.resolve().name
        with tarfile.open(archive, "w") as tar:  # weights barely compress; plain tar keeps it cheap
            # the manifest first: the API then checks each file against it before writing any
            tar.add(directory / MANIFEST_FILE, arcname=f"{top}/{MANIFEST_FILE}")
            for child in sorted(directory.iterdir()):
                if child.name != MANIFEST_FILE:
                    tar.add(child, arcname=f"{top}/{child.name}")
        snapshot = cli.client.post_file("/v1/snapshots/import", archive, "application/x-tar",
                                        {"name": archive.name, "workload": workload})
    emit(snapshot, fmt, tables.snapshot)
