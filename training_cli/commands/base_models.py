from __future__ import annotations

import functools
from urllib.parse import quote

import click

from training_cli import tables
from training_cli.context import CliContext, pass_cli
from training_cli.output import TABLES, emit, output_option


@click.group("base-models")
def group() -> None:
    """The catalog of base models, and the runs each one can start."""


@group.command("get")
@click.argument("model", required=False)
@output_option
@pass_cli
def get(cli: CliContext, model: str | None, fmt: str) -> None:
    """List the catalog, or show MODEL and the runs that can be started for it."""
    if model:
        # Model ids contain "/" (Qwen/Qwen3-8B); the API routes the rest of the path as the id.
        answer = cli.client.get(f"/v1/base-models/{quote(model, safe='/')}")
        kinds = tables.node_kinds(cli.client.get("/v1/info").get("pools")) if fmt in TABLES else ()
        emit(answer, fmt, functools.partial(tables.base_model, device_kinds=kinds))
    else:
        emit(cli.client.get("/v1/base-models"), fmt, tables.base_models)
