"""Where the CLI finds the API: flag > environment > $TRAINING_HOME/cli.yaml > built-in default.

`training up` writes cli.yaml ({apiUrl, token}) for the local stack; `training config view` shows
what was chosen and where each value came from.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml

from shared import reasons
from shared.config import training_home
from training_cli.errors import CliError

DEFAULT_API_URL = "http://127.0.0.1:8600"
ENV_API_URL = "TRAINING_API_URL"
ENV_TOKEN = "TRAINING_TOKEN"


def cli_config_path() -> Path:
    return training_home() / "cli.yaml"


@dataclass(frozen=True)
class Setting:
    value: str | None
    source: str  # e.g. "flag --api-url", "env TRAINING_API_URL", "file ~/.training/cli.yaml"


@dataclass(frozen=True)
class Settings:
    api_url: Setting
    token: Setting

    def view(self, *, show_token: bool = False) -> dict[str, Any]:
        """What `config view` prints: values (the token masked unless `show_token`) and their sources."""
        return {
            "apiUrl": {"value": self.api_url.value, "source": self.api_url.source},
            "token": {"value": self.token.value if show_token else mask(self.token.value), "source": self.token.source},
            "configFile": str(cli_config_path()),
        }


def mask(token: str | None) -> str | None:
    if not token:
        return None
    return "*" * max(len(token) - 4, 4) + token[-4:] if len(token) > 4 else "****"


def read_cli_config(path: Path | None = None) -> dict[str, Any]:
    path = path or cli_config_path()
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError:
        return {}
    except (OSError, yaml.YAMLError) as exc:
        raise CliError(reasons.cli_config_unreadable(str(path), reasons.error_text(exc))) from None
    if not isinstance(raw, dict):
        raise CliError(reasons.cli_config_not_a_mapping(str(path)))
    return raw


def write_cli_config(api_url: str, token: str, path: Path | None = None) -> Path:
    path = path or cli_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it holds a token
    with os.fdopen(fd, "w") as out:
        yaml.safe_dump({"apiUrl": api_url, "token": token}, out, sort_keys=False)
    return path


def resolve(
    *, api_url_flag: str | None = None, token_flag: str | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    env = os.environ if env is None else env
    path = cli_config_path()
    file = read_cli_config(path)
    file_source = f"file {path}"
    api_url = _first(
        (api_url_flag, "flag --api-url"),
        (env.get(ENV_API_URL), f"env {ENV_API_URL}"),
        (file.get("apiUrl"), file_source),
        (DEFAULT_API_URL, "default"),
    )
    token = _first(
        (token_flag, "flag --token"),
        (env.get(ENV_TOKEN), f"env {ENV_TOKEN}"),
        (file.get("token"), file_source),
        (None, "not set"),
    )
    return Settings(api_url, token)


def _first(*candidates: tuple[str | None, str]) -> Setting:
    for value, source in candidates:
        if value:
            return Setting(str(value), source)
    return Setting(None, candidates[-1][1])
