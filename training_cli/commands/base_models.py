from __future__ import annotations

import functools
import os
from urllib.parse import quote

import click

from training_cli import tables
from training_cli.context import CliContext, pass_cli
from training_cli.output import TABLES, emit, output_option

# An import copies or converts a model inside the request (services/api/model_import.py), bounded on
# the server by limits.modelImportTimeoutS (600 s by default): the CLI waits longer than any such bound.
IMPORT_WAIT_S = 3600.0


@click.group("base-models")
def group() -> None:
    """The catalog of base models, and the runs each one can start."""


@group.command("get")
@click.argument("model", required=False)
@output_option
@pass_cli
def get(cli: CliContext, model: str | None, fmt: str) -> None:
    """List the catalog, or show MODEL, its facts and the runs that can be started for it."""
    if model:
        # Model ids contain "/" (Qwen/Qwen3-8B); the API routes the rest of the path as the id.
        answer = cli.client.get(f"/v1/base-models/{quote(model, safe='/')}")
        kinds = tables.node_kinds(cli.client.get("/v1/info").get("pools")) if fmt in TABLES else ()
        emit(answer, fmt, functools.partial(tables.base_model, device_kinds=kinds))
    else:
        emit(cli.client.get("/v1/base-models"), fmt, tables.base_models)


@group.command("import")
@click.argument("path", metavar="PATH")
@click.option("--id", "model_id", help="The model's catalog id (default: the file's or directory's name).")
@output_option
@pass_cli
def import_(cli: CliContext, path: str, model_id: str | None, fmt: str) -> None:
    """Add a real model to the catalog: PATH is a Hugging Face model directory or a .gguf file (converted
    to safetensors, its tokenizer and chat template kept) on the API's machine, under one of the
    deployment's modelImportRoots. Admin tokens only. Its shape, chat template and generation defaults
    are read from its own files; a model the engines cannot train or serve is refused, saying why."""
    body = {"path": os.path.abspath(os.path.expanduser(path)), **({"id": model_id} if model_id else {})}
    emit(cli.client.post("/v1/base-models/import", body, timeout_s=IMPORT_WAIT_S), fmt, tables.base_model)
