"""`training ui`: the dashboard in a browser, signed in with the CLI's own token."""

from __future__ import annotations

import webbrowser
from urllib.parse import quote

import click

from shared import reasons
from training_cli.context import CliContext, pass_cli
from training_cli.errors import CliError


def dashboard_url(api_url: str, token: str | None) -> str:
    """The dashboard's address; with a token, one that signs in with it (`#token=`: a fragment, which
    the browser keeps to itself, so no server log holds it; the page takes it out of the address)."""
    base = api_url.rstrip("/") + "/ui/"
    return base + (f"#token={quote(token, safe='')}" if token else "")


@click.command("ui")
@click.option("--print-url", is_flag=True, help="Print the signed-in address instead of opening a browser "
                                                "(it holds the token: treat it as one).")
@pass_cli
def ui(cli: CliContext, print_url: bool) -> None:
    """Open the dashboard in a browser, signed in with the token `training config view` shows."""
    settings = cli.settings
    url = dashboard_url(settings.api_url.value or "", settings.token.value)
    if print_url:
        click.echo(url)
        return
    if not webbrowser.open(url):
        raise CliError(reasons.browser_not_opened(dashboard_url(settings.api_url.value, None)))
    click.echo(reasons.dashboard_opened(dashboard_url(settings.api_url.value, None)))
