"""Where the CLI finds the API: flag > env > cli.yaml > default, and `config view`."""

from __future__ import annotations

import json

from click.testing import CliRunner

from training_cli.main import cli
from training_cli.settings import resolve, write_cli_config


def test_flag_beats_env_beats_file(home):
    write_cli_config("http://file:1", "file-token-aaaa")
    from_file = resolve(env={})
    assert (from_file.api_url.value, from_file.token.value) == ("http://file:1", "file-token-aaaa")
    assert from_file.api_url.source == f"file {home / 'cli.yaml'}"

    env = {"TRAINING_API_URL": "http://env:2", "TRAINING_TOKEN": "env-token-bbbb"}
    from_env = resolve(env=env)
    assert (from_env.api_url.value, from_env.token.value) == ("http://env:2", "env-token-bbbb")
    assert from_env.token.source == "env TRAINING_TOKEN"

    from_flag = resolve(api_url_flag="http://flag:3", token_flag="flag-token-cccc", env=env)
    assert (from_flag.api_url.value, from_flag.token.value) == ("http://flag:3", "flag-token-cccc")
    assert from_flag.api_url.source == "flag --api-url"


def test_defaults_without_anything():
    settings = resolve(env={})
    assert settings.api_url.value == "http://127.0.0.1:8600" and settings.api_url.source == "default"
    assert settings.token.value is None and settings.token.source == "not set"


def test_config_view_masks_the_token_and_names_sources(home):
    write_cli_config("http://file:1", "secret-token-9876")
    runner = CliRunner()
    result = runner.invoke(cli, ["--api-url", "http://flag:3", "config", "view", "-o", "json"], env={})
    assert result.exit_code == 0
    view = json.loads(result.output)
    assert view["apiUrl"] == {"value": "http://flag:3", "source": "flag --api-url"}
    assert view["token"]["value"].endswith("9876") and "secret" not in view["token"]["value"]
    assert view["token"]["source"] == f"file {home / 'cli.yaml'}"

    table = runner.invoke(cli, ["config", "view"], env={"TRAINING_TOKEN": "envtoken-4321"})
    assert "env TRAINING_TOKEN" in table.output and "4321" in table.output and "envtoken" not in table.output


def test_the_flag_reaches_the_api(training, api):
    # The env points nowhere; the flag wins and the call succeeds.
    result = training("--api-url", api.url, "info", "-o", "json", env={"TRAINING_API_URL": "http://127.0.0.1:9"})
    assert result.exit_code == 0, result.output


def test_cli_yaml_is_private(home):
    path = write_cli_config("http://x:1", "t")
    assert path.stat().st_mode & 0o077 == 0


def test_the_readme_openai_snippet_signs_in_with_the_cli_settings(home, monkeypatch):
    """Issue 30: the README's OpenAI snippet used an undefined TRAINING_TOKEN; it reads the CLI's
    settings. Its lines up to the request run here as written (the request itself needs an endpoint)."""
    import re
    from pathlib import Path

    monkeypatch.delenv("TRAINING_TOKEN", raising=False)
    monkeypatch.delenv("TRAINING_API_URL", raising=False)
    write_cli_config("http://127.0.0.1:8600", "readme-token-1234")
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    snippet = re.search(r"```python\n(from openai import OpenAI\n.*?)```", readme, flags=re.S).group(1)
    setup = snippet.split("client.chat.completions.create")[0]
    scope: dict = {}
    exec(compile(setup, "README.md", "exec"), scope)
    client = scope["client"]
    assert str(client.base_url) == "http://127.0.0.1:8600/v1/" and client.api_key == "readme-token-1234"
