from __future__ import annotations

import click

from training_cli.context import CliContext, pass_cli
from training_cli.output import emit, fields_table, output_option


@click.group("config")
def group() -> None:
    """The CLI's own settings (API address and token)."""


@group.command("view")
@click.option("--show-token", is_flag=True, help="Print the token whole (to paste into the dashboard's sign-in).")
@output_option
@pass_cli
def view(cli: CliContext, show_token: bool, fmt: str) -> None:
    """Show the API address and token the CLI will use, and where each came from (the token masked
    unless --show-token)."""
    data = cli.settings.view(show_token=show_token)

    def table(d: dict) -> object:
        return fields_table(
            [
                ("API URL", f"{d['apiUrl']['value']}  ({d['apiUrl']['source']})"),
                ("Token", f"{d['token']['value'] or '-'}  ({d['token']['source']})"),
                ("Config file", d["configFile"]),
            ]
        )

    emit(data, fmt, table)
