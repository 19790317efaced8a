"""What every command shares: the resolved settings and an API client built from them."""

from __future__ import annotations

from dataclasses import dataclass, field

import click

from training_cli.client import ApiClient
from training_cli.settings import Settings, resolve


@dataclass
class CliContext:
    api_url_flag: str | None = None
    token_flag: str | None = None
    _settings: Settings | None = field(default=None, repr=False)
    _client: ApiClient | None = field(default=None, repr=False)

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = resolve(api_url_flag=self.api_url_flag, token_flag=self.token_flag)
        return self._settings

    @property
    def client(self) -> ApiClient:
        if self._client is None:
            s = self.settings
            self._client = ApiClient(s.api_url.value or "", s.token.value)
        return self._client


pass_cli = click.make_pass_decorator(CliContext, ensure=True)
