from __future__ import annotations

from pathlib import Path

import click

from training_cli import short_ids as ids
from training_cli import tables
from training_cli.commands.common import list_options, list_params, say_or_emit
from training_cli.context import CliContext, pass_cli
from training_cli.output import emit, emit_list, output_option


@click.group("datasets")
def group() -> None:
    """Uploaded JSONL datasets (validated on upload, never altered after)."""


@group.command("create")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--name", help="A name to show (default: the file name).")
@click.option("--workload", help="The workload it belongs to.")
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="A tag to find it by (repeatable).")
@click.option("--image", "images", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="An image file the rows name by its file name as an image part's url (repeatable).")
@output_option
@pass_cli
def create(cli: CliContext, file: Path, name: str | None, workload: str | None, tags: tuple[str, ...],
           images: tuple[Path, ...], fmt: str) -> None:
    """Upload FILE (JSONL: chat messages, prompt+completion, or prompts for grpo), with the image
    files its rows name."""
    dataset = cli.client.upload("/v1/datasets", file, {"name": name, "workload": workload, "tags": list(tags) or None}, images=images)
    emit(dataset, fmt, tables.dataset)


@group.command("get")
@click.argument("dataset_id", metavar="[ID]", required=False, type=ids.DATASET)
@list_options(status=False, labels=True)
@output_option
@pass_cli
def get(cli: CliContext, dataset_id: str | None, fmt: str, **filters: object) -> None:
    """List datasets, or show one."""
    if dataset_id:
        emit(cli.client.get(f"/v1/datasets/{dataset_id}"), fmt, tables.dataset)
    else:
        emit_list(cli.client.get("/v1/datasets", list_params(**filters)), fmt, tables.datasets, "datasets")


@group.command("delete")
@click.argument("dataset_id", metavar="ID", type=ids.DATASET)
@output_option
@pass_cli
def delete(cli: CliContext, dataset_id: str, fmt: str) -> None:
    """Delete a dataset no run or evaluation still reads (its record stays, marked deleted)."""
    dataset = cli.client.delete(f"/v1/datasets/{dataset_id}")
    say_or_emit(dataset, fmt, f"dataset {dataset.get('id', dataset_id)}: deleted", tables.dataset)
