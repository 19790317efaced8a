"""What the training CLI says when it cannot do what it was asked (training_cli/): its `error: ...`
lines (training_cli/errors.CliError)."""

from __future__ import annotations


def api_unreachable(base_url: str) -> str:
    return f"cannot reach the trainer API at {base_url} (is the stack up? run: training up)"


def api_timed_out(base_url: str, timeout_s: float) -> str:
    return f"the trainer API at {base_url} did not answer within {timeout_s:g}s"


def api_answer_not_json(method: str, url: str) -> str:
    return f"the trainer API answered {method} {url} with something that is not JSON"


def body_file_unreadable(name: str, error: str) -> str:
    """A request body file (`--file`) that YAML (a superset of JSON) cannot read."""
    return f"{name} is neither valid YAML nor JSON: {error}"


def body_file_not_a_mapping(what: str) -> str:
    """`what`: whose request body the file holds (the endpoint's, the evaluation's)."""
    return f"the file must hold a mapping (the {what}'s request body)"


def run_file_not_a_mapping(name: str) -> str:
    return f"{name} must hold a mapping (the run's request body)"


def set_flag_invalid(item: str) -> str:
    return f"--set takes PATH=VALUE, got {item!r}"


def run_trains_steps(*, new_steps: int, start_step: int, end_step: int | None, estimated: bool) -> str:
    """What `runs create` and `runs branch` say of a new run's stepRange (issue 30)."""
    about = "about " if estimated else ""
    return f"it trains {about}{new_steps} step(s): from step {start_step} to step {end_step}"


PROCESS_LOG_NOT_FOLLOWED = "--process prints the process log as it is now; it takes no -f"


def archive_unreadable(what: str, error: str) -> str:
    return f"the {what} archive could not be read: {error}"


def archive_member_not_plain(what: str, member: str) -> str:
    return f"the {what} archive holds {member}, which is not a plain file; nothing was extracted"


def archive_member_outside(what: str, member: str) -> str:
    return f"the {what} archive holds a path outside its folder ({member}); nothing was extracted"


def cli_config_unreadable(path: str, error: str) -> str:
    return f"cannot read the CLI config file {path}: {error}"


def cli_config_not_a_mapping(path: str) -> str:
    return f"the CLI config file {path} must be a mapping with apiUrl and token"


# --- `training quickstart` (training_cli/quickstart.py)

def sample_dataset_missing(path: str) -> str:
    return f"the bundled sample dataset is missing ({path})"


def gave_up_waiting(what: str, waited: str) -> str:
    return f"gave up waiting for {what} after {waited}"


def quickstart_evaluation_ended(evaluation_id: str, status: str, detail: str | None) -> str:
    return f"evaluation {evaluation_id} ended {status}: {detail or 'no detail'}"


def quickstart_endpoint_ended(endpoint_id: str, phase: str, detail: str | None) -> str:
    return f"endpoint {endpoint_id} ended {phase}: {detail or 'no detail'}"


def quickstart_model_missing(model: str, models: list[str]) -> str:
    return f"the catalog has no {model} (it has: {', '.join(models) or 'nothing'})"


def quickstart_run_without_snapshot(run_id: str) -> str:
    return f"run {run_id} succeeded but lists no snapshot"


# --- `training ui` (training_cli/commands/ui.py) and `endpoints get` (training_cli/tables.py)

def browser_not_opened(url: str) -> str:
    return (f"no browser could be opened here; open {url} and sign in with the token "
            "`training config view --show-token` prints (or run training ui --print-url)")


def dashboard_opened(url: str) -> str:
    return f"opened the dashboard at {url}, signed in with the CLI's token"


def endpoint_openai_use(model: str) -> str:
    """How to reach an endpoint with the official `openai` client (what `endpoints get` shows)."""
    return f"model={model}, api_key=your trainer token (training config view --show-token)"


ENDPOINT_PROCESS_ADDRESS = "the serving process on its node; it answers only the trainer (use the base URL above)"


# `comparisons get` while a row is still scoring: no best is marked before every row has ended.
COMPARISON_BEST_WHEN_ENDED = "the best is marked once every row has ended"
