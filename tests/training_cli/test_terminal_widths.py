"""Every read command in an ordinary terminal (issue 30): the real CLI, in a real pseudo-terminal of
80 and of 120 columns, against the real API (services/api in a thread, real Redis) holding a
GRPO run with metrics, queued runs that wait on an endpoint, snapshots, an evaluation, a comparison,
named and tagged resources. No line may be wider than the terminal (nothing for it to wrap), and
what a person reads a table for must be there: ids (short: a prefix the CLI takes back), names,
statuses, the numbers.

One process per width runs the commands one after another (`training_cli.main.cli`, as the
`training` script does), each output fenced by a line of its own, so the CLI is imported twice,
not fifty times. No worker runs: what a worker would write (a run's progress and metrics, a
snapshot) is written to the store as its reporter writes it."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from tests.conftest import ADMIN_TOKEN
from tests.training_cli.test_evaluations_cli import ROWS, finish_as_worker, snapshot
from tests.training_cli.test_run_reads import GRPO_POINT

REPO = Path(__file__).resolve().parents[2]
FENCE = "=====8<====="
# Colours are taken out; every other control sequence (the cursor moves of a live line) starts a line
# again, as the terminal draws it.
COLOURS = re.compile(r"\x1b\[[0-9;]*m|\x1b\][^\x07]*\x07|\x1b[()][A-Za-z0-9]|\x1b[=>]")
CURSOR = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
DRIVER = f"""
import shlex, sys
from training_cli.main import cli
for line in sys.stdin.read().splitlines():
    print({FENCE!r}, line, flush=True)
    try:
        cli(shlex.split(line), prog_name="training", standalone_mode=False)
    except SystemExit:
        pass
    except Exception as exc:  # a CliError: shown as the CLI shows it
        getattr(exc, "show", lambda: print("error:", exc))()
    sys.stdout.flush()
"""


def in_terminal(commands: list[str], columns: int, env: dict[str, str]) -> dict[str, str]:
    """Run `commands` in a pseudo-terminal `columns` wide; each command's output with the terminal's
    control sequences taken out."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    full_env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    full_env.update(env, TERM="xterm-256color", PYTHONPATH=str(REPO))
    process = subprocess.Popen([sys.executable, "-c", DRIVER], stdin=subprocess.PIPE, stdout=slave, stderr=slave,
                               env=full_env, cwd=REPO, close_fds=True)
    os.close(slave)
    process.stdin.write("\n".join(commands).encode())
    process.stdin.close()
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            process.kill()
            pytest.fail("the CLI wrote nothing for 120 s")
        try:
            data = os.read(master, 65536)
        except OSError:  # the other end closed: the process has ended
            break
        if not data:
            break
        chunks.append(data)
    process.wait()
    os.close(master)
    text = CURSOR.sub("\r", COLOURS.sub("", b"".join(chunks).decode("utf-8", "replace")))
    outputs: dict[str, str] = {}
    for part in text.split(FENCE + " ")[1:]:
        command, _, output = part.partition("\n")
        outputs[command.strip("\r")] = output.replace("\r\n", "\n")
    return outputs


def too_wide(output: str, columns: int) -> list[str]:
    """Lines wider than the terminal (a carriage return starts a line again, as a live line redraws)."""
    return [piece for line in output.split("\n") for piece in line.split("\r") if len(piece) > columns]


@pytest.fixture
def deployment(real_training, real_api, config, tmp_path):
    """What the commands read: every kind of resource, named and tagged where it can be."""
    context = real_api["context"]
    path = tmp_path / "reverse.jsonl"
    path.write_text(ROWS)
    dataset = json.loads(real_training("datasets", "create", str(path), "--name", "reverse words, 3 rows",
                                       "--tag", "task=reverse", "-o", "json").output)["id"]
    endpoint = json.loads(real_training("endpoints", "create", "--model", "builtin/tiny-qwen3", "--name", "chat",
                                        "--tag", "demo", "-o", "json").output)["id"]
    context.claims().grant_pass(config, "default")  # the endpoint holds a slot: the runs below wait on it

    def run(*flags: str) -> str:
        return json.loads(real_training("runs", "create", "--model", "builtin/tiny-qwen3", "--dataset", dataset,
                                        *flags, "-o", "json").output)["id"]

    grpo = run("--name", "grpo reverse, reward exact match and length", "--tag", "team=nlp", "--tag", "sweep-3")
    waiting = run("--gpus", "2", "--name", "sft reverse 2 slots")
    behind = run("--name", "sft behind it")
    context.store.update(grpo, lambda d: {
        **d, "status": "SUCCEEDED", "plan": {**d["plan"], "method": "grpo"},
        "progress": {"step": 40, "totalSteps": 40, "loss": 0.0123, "firstLoss": 0.5, "reward": 0.4375,
                     "tokensPerSecond": 1234.5, "etaSeconds": None},
        "detail": None, "finishedAt": d["createdAt"]})
    for step in range(1, 41):
        context.store.add_metrics(grpo, {**GRPO_POINT, "step": step, "loss": 7.563e-05 * step,
                                         "rewards": {"exact_match": {"mean": 0.5, "std": 0.5},
                                                     "length": {"mean": 0.125, "std": 0.1}},
                                         "handoffBytes": 3 << 20, "kl": 0.00123})
    parent, branch = snapshot(context, run=grpo, step=20), snapshot(context, run=grpo, step=40)
    comparison = json.loads(real_training("comparisons", "create", parent, branch, "--dataset", dataset,
                                          "-o", "json").output)
    for row, loss in zip(comparison["rows"], (2.0, 1.5)):
        finish_as_worker(context, row["evaluation"], {"loss": loss, "perplexity": 2.718 ** loss}, [])
    evaluation = json.loads(real_training("evaluations", "create", "--model", "builtin/tiny-qwen3", "--snapshot",
                                          branch, "--dataset", dataset, "-o", "json").output)["id"]
    return {"dataset": dataset, "endpoint": endpoint, "grpo": grpo, "waiting": waiting, "behind": behind,
            "snapshot": branch, "comparison": comparison["id"], "evaluation": evaluation,
            "env": {"TRAINING_API_URL": real_api["url"], "TRAINING_TOKEN": ADMIN_TOKEN,
                    "TRAINING_HOME": str(tmp_path / "home")}}


def short(resource_id: str) -> str:
    kind, _, body = resource_id.partition("-")
    return f"{kind}-{body[:8]}"


@pytest.mark.parametrize("columns", [80, 120])
def test_every_read_command_fits_the_terminal_and_shows_what_it_is_for(deployment, columns):
    d = deployment
    expected = {  # command -> what must be on the screen
        "info": ["Version", "default", "local"],
        "base-models get": ["builtin/tiny-qwen3", "Qwen/Qwen3-8B"],
        "base-models list": ["builtin/tiny-qwen3"],
        "base-models get builtin/tiny-qwen3": ["Runs that can be started", "sft", "grpo"],
        "datasets get": [short(d["dataset"]), "reverse words"],
        f"datasets get {d['dataset']}": [d["dataset"], "reverse words, 3 rows", "task=reverse"],
        "runs get": [short(d["grpo"]), short(d["waiting"]), "SUCCEEDED", "QUEUED", "40/40", "grpo reverse"],
        "runs list --tag team=nlp": [short(d["grpo"]), "SUCCEEDED"],
        f"runs get {d['grpo']}": ["grpo reverse, reward exact match and length", "team=nlp, sweep-3", "0.4375"],
        f"runs get {short(d['waiting'])}": [d["waiting"], "Waiting on", d["endpoint"]],
        f"runs metrics {d['grpo']}": ["Step", "Loss", "Reward", "Reward exact_match", "0.003025", "0.75"],
        f"runs logs {d['grpo']}": ["INFO", "queued in pool default for 1 CPU slot(s)", "sft-single"],  # wraps between words
        f"runs watch {d['grpo']}": ["SUCCEEDED", "━━━━━━━━━━", "40/40", "loss 0.0123", "reward 0.4375"],
        "snapshots get": [short(d["snapshot"]), short(d["grpo"]), "40"],
        f"snapshots get {d['snapshot']}": [d["snapshot"], "peft-safetensors"],
        "evaluations get": [short(d["evaluation"]), "QUEUED"],
        f"evaluations get {d['evaluation']}": [d["evaluation"], "Waiting on"],
        "comparisons get": [short(d["comparison"]), "SUCCEEDED"],
        f"comparisons get {d['comparison']}": [short(d["snapshot"]), "1.5 *"],
        "endpoints get": [short(d["endpoint"]), "chat", "QUEUED"],
        f"endpoints get {d['endpoint']}": [d["endpoint"], "chat", "demo"],
        "pools get": ["default", "big"],
        "pools get default": ["Held by", short(d["endpoint"]), "Queue", short(d["waiting"]), short(d["behind"])],
        "config view": ["API URL", "Token"],
    }
    outputs = in_terminal(list(expected), columns, d["env"])
    assert set(outputs) == set(expected), outputs.keys()
    for command, wanted in expected.items():
        output = outputs[command]
        assert "error" not in output and "Traceback" not in output, (command, output)
        assert too_wide(output, columns) == [], (command, output)
        missing = [text for text in wanted if text not in output]
        assert missing == [], (command, columns, output)
    # one line a row: the runs list holds a header and three rows, however narrow
    runs = [line for line in outputs["runs get"].splitlines() if line.strip()]
    assert len(runs) == 4 and runs[0].startswith("ID")
    if columns == 120:  # room for more of the run's columns
        assert "Method" in runs[0] and "Model" in runs[0]
