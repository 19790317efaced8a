"""`training up`, `training down`, `training status` and `training quickstart` (the embedded
default, SPEC 1)."""

from __future__ import annotations

import sys
import time

import click

from shared import reasons
from shared.config import training_home
from training_cli import local_stack
from training_cli.client import ApiClient
from training_cli.output import TABLES, console, dump, duration, list_table, output_option
from training_cli.quickstart import run_quickstart
from training_cli.stack_state import StackState


@click.command()
@click.option("--detach", is_flag=True, help="Return once every service answers (they keep running).")
@click.option("--port", type=click.IntRange(1, 65535), default=8600, show_default=True, help="The API's port.")
def up(detach: bool, port: int) -> None:
    """Bring the local stack up: Redis (if none answers), API, scheduler, one worker and endpoint
    manager per node, under a supervisor that starts again any of them that dies."""
    out = console()
    stack, watcher = local_stack.up(port=port, out=out)
    if stack.already_up:
        out.print(f"the local stack is already up at {stack.api_url}")
        return
    out.print(f"[green]the local stack is up[/] at {stack.api_url} (logs in {training_home() / 'stack' / 'logs'})")
    out.print("the CLI now uses it: try `training info`")
    if detach:
        out.print("stop it with: training down")
        return
    out.print("press Ctrl-C to stop it")
    sys.exit(local_stack.foreground(watcher, out))


@click.command()
def down() -> None:
    """Stop the local stack that `training up` started (and its Redis, if it started one)."""
    local_stack.down(out=console())


@click.command("stop")
@click.argument("service")
def stop_service(service: str) -> None:
    """Stop one service of the local stack (as `training status` names it: worker-NODE, api, ...)
    and keep it stopped: the supervisor does not start it again until `training start SERVICE`."""
    local_stack.stop_service(service, out=console())


@click.command("start")
@click.argument("service")
def start_service(service: str) -> None:
    """Start again a service of the local stack that `training stop` stopped."""
    local_stack.start_service(service, out=console())


@click.command()
@output_option
def status(fmt: str) -> None:
    """The local stack's processes: which run, how often the supervisor started each again, how each last ended."""
    records = StackState().records()
    if not records:
        click.echo("no local stack is running")
        return
    rows = [{"name": r.name, "pid": r.pid, "running": r.alive(), "restarts": r.restarts, "lastExit": r.last_exit,
             "startedAt": r.started_at, "held": r.held} for r in records]
    if fmt not in TABLES:
        dump({"services": rows}, fmt)
        return
    console().print(list_table(["SERVICE", "PID", "RUNNING", "RESTARTS", "LAST ENDED", "UP FOR"], [[
        row["name"], row["pid"], "yes" if row["running"] else ("no (training stop)" if row["held"] else "no"),
        row["restarts"],
        reasons.how_it_ended(row["lastExit"]) if row["lastExit"] is not None else "-",
        duration(time.time() - row["startedAt"]) if row["running"] else "-"] for row in rows]))


@click.command()
@click.option("--port", type=click.IntRange(1, 65535), default=8600, show_default=True,
              help="The API's port if the stack has to be started.")
def quickstart(port: int) -> None:
    """Bring the stack up, fine-tune builtin/small-qwen3 on the sample task, evaluate the base model and
    the adapter on held-out rows, and serve the adapter behind an endpoint (training_cli/quickstart.py)."""
    out = console()
    stack, _ = local_stack.up(port=port, out=out)
    out.print(("the local stack is already up" if stack.already_up else "[green]started the local stack[/]")
              + f" at {stack.api_url}")
    run_quickstart(ApiClient(stack.api_url, stack.token), out)
