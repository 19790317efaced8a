from __future__ import annotations

import click

from training_cli import tables
from training_cli.context import CliContext, pass_cli
from training_cli.output import emit, emit_list, output_option


@click.group("pools")
def group() -> None:
    """GPU pools: nodes, free and held GPUs, quotas, and who waits in what order."""


@group.command("get")
@click.argument("pool", metavar="[POOL]", required=False)
@output_option
@pass_cli
def get(cli: CliContext, pool: str | None, fmt: str) -> None:
    """List pools, or show one: its holders and its queue with each claim's reason."""
    if pool:
        emit(cli.client.get(f"/v1/pools/{pool}"), fmt, tables.pool)
    else:
        emit_list(cli.client.get("/v1/pools"), fmt, tables.pools, "pools")
