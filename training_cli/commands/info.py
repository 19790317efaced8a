from __future__ import annotations

import click

from training_cli import tables
from training_cli.context import CliContext, pass_cli
from training_cli.output import emit, output_option


@click.command()
@output_option
@pass_cli
def info(cli: CliContext, fmt: str) -> None:
    """The deployment: version, API address, pools with nodes and free GPUs, methods, catalog size."""
    emit(cli.client.get("/v1/info"), fmt, tables.info)
