"""Names, tags and short ids through the CLI against the real API (services/api in a thread, real
Redis); `training ui`, `config view --show-token`, and what `endpoints get` says to send requests to."""

from __future__ import annotations

import json

import pytest

from shared import reasons
from tests.conftest import ADMIN_TOKEN
from tests.training_cli.test_evaluations_cli import ROWS
from training_cli.commands.ui import dashboard_url


@pytest.fixture
def dataset(real_training, tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(ROWS)
    return json.loads(real_training("datasets", "create", str(path), "--tag", "v1", "-o", "json").output)["id"]


def _create(real_training, dataset, *flags):
    return json.loads(real_training("runs", "create", "--model", "builtin/tiny-qwen3", "--dataset", dataset, *flags,
                                    "-o", "json").output)


def test_runs_take_a_name_and_tags_and_lists_filter_by_them(real_training, dataset):
    named = _create(real_training, dataset, "--name", "reverse lr 2e-4", "--tag", "team=nlp", "--tag", "baseline")
    other = _create(real_training, dataset, "--name", "other", "--tag", "team=nlp")
    assert (named["name"], named["tags"]) == ("reverse lr 2e-4", ["team=nlp", "baseline"])
    listed = lambda *flags: [r["id"] for r in json.loads(real_training("runs", "get", *flags, "-o", "json").output)["items"]]  # noqa: E731
    assert listed("--tag", "team=nlp") == [other["id"], named["id"]]
    assert listed("--tag", "team=nlp", "--tag", "baseline") == [named["id"]]
    assert listed("--name", "REVERSE") == [named["id"]]
    assert listed("--name", "nothing like it") == []
    assert real_training("runs", "list", "--name", "nothing like it").output == "no runs found\n"
    refused = real_training("runs", "create", "--model", "builtin/tiny-qwen3", "--dataset", dataset, "--tag", "no tag",
                            ok=False)
    assert refused.exit_code == 1 and reasons.TAG_RULE in refused.output
    table = real_training("runs", "get", "-o", "wide").output
    assert named["id"] in table and "team=nlp, baseline" in table  # -o wide: whole ids, the tags
    assert json.loads(real_training("datasets", "list", "--tag", "v1", "-o", "json").output)["items"][0]["id"] == dataset


def test_a_short_id_is_taken_wherever_an_id_is_and_two_matches_are_refused(real_training, real_api, dataset):
    run = _create(real_training, dataset)
    prefix = run["id"][:12]
    assert json.loads(real_training("runs", "get", prefix, "-o", "json").output)["id"] == run["id"]
    assert real_training("runs", "logs", prefix).output.count("queued in pool default") == 1
    # two runs whose ids share a start (ids written as a store of another deployment may hold them)
    store = real_api["context"].store
    twins = [store.create({**store.get(run["id"]), "id": f"run-abcdef{tail}"})["id"] for tail in ("0" * 14, "1" * 14)]
    result = real_training("runs", "get", "run-abcdef", ok=False)
    assert result.exit_code == 1
    assert f"error: {reasons.short_id_ambiguous('run', 'run-abcdef', twins[::-1])}" in result.output
    assert json.loads(real_training("runs", "get", "run-abcdef1", "-o", "json").output)["id"] == twins[1]
    # a prefix that starts no id the token may see is sent as typed: the API says it does not exist
    missing = real_training("runs", "get", "run-fffffff", ok=False)
    assert missing.exit_code == 1 and "run run-fffffff does not exist" in missing.output


def test_endpoints_get_shows_the_openai_base_url_not_the_process(real_training, real_api):
    endpoint = json.loads(real_training("endpoints", "create", "--model", "builtin/tiny-qwen3", "--name", "chat",
                                        "--tag", "demo", "-o", "json").output)
    real_api["context"].store.update(endpoint["id"], lambda d: {**d, "phase": "READY", "address": "127.0.0.1:40123"})
    shown = real_training("endpoints", "get", "chat").output
    assert f"OpenAI base URL  {real_api['url']}/v1" in shown
    assert reasons.endpoint_openai_use("chat") in " ".join(shown.split())
    assert "127.0.0.1:40123 (" + reasons.ENDPOINT_PROCESS_ADDRESS[:30] in " ".join(shown.split())
    assert "demo" in shown
    listed = real_training("endpoints", "list", "--tag", "demo").output
    assert endpoint["id"] in listed and "chat" in listed


def test_config_view_shows_the_token_on_request_and_ui_signs_the_dashboard_in(real_training, real_api):
    masked = real_training("config", "view").output
    assert ADMIN_TOKEN not in masked
    assert ADMIN_TOKEN in real_training("config", "view", "--show-token").output
    assert json.loads(real_training("config", "view", "--show-token", "-o", "json").output)["token"]["value"] == ADMIN_TOKEN
    url = real_training("ui", "--print-url").output.strip()
    assert url == dashboard_url(real_api["url"], ADMIN_TOKEN) == f"{real_api['url']}/ui/#token={ADMIN_TOKEN}"



def test_a_branch_takes_its_own_name_and_tags_and_a_short_snapshot_id(real_training, real_api, dataset):
    from tests.training_cli.test_evaluations_cli import snapshot

    parent = _create(real_training, dataset, "--name", "parent", "--tag", "team=nlp")
    snap = snapshot(real_api["context"], run=parent["id"], step=10)
    branch = json.loads(real_training("runs", "branch", snap[:13], "--restore", "weights", "--name", "parent, lr/2",
                                      "--tag", "branch", "-o", "json").output)
    assert (branch["name"], branch["tags"]) == ("parent, lr/2", ["branch"])  # its own: not the parent's
    assert branch["parent"]["snapshot"] == snap
