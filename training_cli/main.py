"""The `training` CLI: `training RESOURCE VERB [ID] [flags]`, a client of the trainer's REST API."""

from __future__ import annotations

import click

from training_cli.commands import (
    base_models,
    comparisons,
    config,
    datasets,
    endpoints,
    evaluations,
    info,
    pools,
    runs,
    snapshots,
    stack,
    ui,
)
from training_cli.commands.common import add_list_alias
from training_cli.context import CliContext


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--api-url", envvar=None, help="The trainer API (default: $TRAINING_API_URL, then cli.yaml).")
@click.option("--token", envvar=None, help="API token (default: $TRAINING_TOKEN, then cli.yaml).")
@click.version_option(package_name="the-trainer", prog_name="training")
@click.pass_context
def cli(ctx: click.Context, api_url: str | None, token: str | None) -> None:
    """Fine-tune open language models on your own GPUs: runs, snapshots, datasets."""
    ctx.obj = CliContext(api_url_flag=api_url, token_flag=token)


cli.add_command(info.info)
cli.add_command(base_models.group)
cli.add_command(datasets.group)
cli.add_command(runs.group)
cli.add_command(snapshots.group)
cli.add_command(pools.group)
cli.add_command(endpoints.group)
cli.add_command(evaluations.group)
cli.add_command(comparisons.group)
cli.add_command(config.group)
cli.add_command(ui.ui)
for resource in (base_models, datasets, runs, snapshots, pools, endpoints, evaluations, comparisons):
    add_list_alias(resource.group)
cli.add_command(stack.up)
cli.add_command(stack.down)
cli.add_command(stack.status)
cli.add_command(stack.stop_service)
cli.add_command(stack.start_service)
cli.add_command(stack.quickstart)


def main() -> None:
    cli(prog_name="training")


if __name__ == "__main__":
    main()
