"""A small client of the trainer's REST API (docs/api.md). Every failure becomes a CliError.

A read (GET) answered 503 with Retry-After (the trainer's Redis is restarting, docs/faults.md) is
sent again after that many seconds, for up to `RETRY_UNAVAILABLE_S` in all, so `runs watch` or a
script's `get` rides out a store restart; a write answered 503 is not sent again (it may have been
half done), its sentence says what to do."""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Iterator

import requests

from shared import reasons
from training_cli.errors import ApiError, CliError

DEFAULT_TIMEOUT_S = 30.0
RETRY_UNAVAILABLE_S = 30.0


class ApiClient:
    def __init__(self, base_url: str, token: str | None, *, timeout_s: float = DEFAULT_TIMEOUT_S):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s
        self.session = requests.Session()
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"

    # -- verbs ---------------------------------------------------------------------------------
    def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        return self._json(self._request("GET", path, params=_clean(params)))

    def post(self, path: str, body: Any = None, **kwargs: Any) -> Any:
        return self._json(self._request("POST", path, json=body, **kwargs))

    def delete(self, path: str) -> Any:
        return self._json(self._request("DELETE", path))

    def upload(self, path: str, file: Path, fields: dict[str, Any], images: tuple[Path, ...] = ()) -> Any:
        """A multipart upload of `file`; `images` go with it as `images` files, each under its file name."""
        with ExitStack() as stack:
            files = [("file", (file.name, stack.enter_context(open(file, "rb")), "application/x-ndjson"))]
            files += [("images", (image.name, stack.enter_context(open(image, "rb")), "application/octet-stream"))
                      for image in images]
            return self._json(self._request("POST", path, files=files, data=_clean(fields)))

    def post_file(self, path: str, file: Path, content_type: str, params: dict[str, Any]) -> Any:
        """POST `file` as the request body, streamed from disk (a multipart body would be built in memory)."""
        with open(file, "rb") as handle:
            return self._json(self._request("POST", path, data=handle, params=_clean(params),
                                            headers={"Content-Type": content_type}))

    def download(self, path: str, target: Path, chunk_bytes: int = 1 << 20) -> Path:
        response = self._request("GET", path, stream=True)
        with open(target, "wb") as out:
            for chunk in response.iter_content(chunk_bytes):
                out.write(chunk)
        return target

    def text(self, path: str) -> str:
        """A text answer (a run's process log) as it came."""
        response = self._request("GET", path)
        response.encoding = response.encoding or "utf-8"
        return response.text

    def items(self, path: str, params: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """Every item of a paged list, following `nextCursor`."""
        params = dict(_clean(params) or {})
        while True:
            page = self.get(path, params)
            if isinstance(page, list):
                yield from page
                return
            yield from page.get("items") or []
            if not page.get("nextCursor"):
                return
            params["after"] = page["nextCursor"]

    def log_items(self, path: str, after: int = 0) -> list[dict[str, Any]]:
        """Every item of an append-only log (`/events`, `/metrics`) from index `after`, following
        its `?after=N` paging until a page comes back empty."""
        cursor, seen = LogCursor(self, path, after), []
        while batch := cursor.fetch():
            seen.extend(batch)
        return seen

    # -- plumbing ------------------------------------------------------------------------------
    def _request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        deadline = time.monotonic() + RETRY_UNAVAILABLE_S
        while True:
            response = self._send(method, path, **kwargs)
            wait_s = _retry_after_s(response) if method == "GET" else None
            if wait_s is None or time.monotonic() + wait_s > deadline:
                break
            response.close()
            time.sleep(wait_s)
        if not response.ok:
            raise _api_error(response)
        return response

    def _send(self, method: str, path: str, *, timeout_s: float | None = None, **kwargs: Any) -> requests.Response:
        """`timeout_s`: this request's own wait for an answer (default: the client's)."""
        url = self.base_url + path
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        try:
            return self.session.request(method, url, timeout=timeout_s, **kwargs)
        except requests.ConnectionError:
            raise CliError(reasons.api_unreachable(self.base_url)) from None
        except requests.Timeout:
            raise CliError(reasons.api_timed_out(self.base_url, timeout_s)) from None

    @staticmethod
    def _json(response: requests.Response) -> Any:
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise CliError(reasons.api_answer_not_json(response.request.method, response.url)) from None


def _retry_after_s(response: requests.Response) -> float | None:
    """The seconds a 503 asks to wait before the same request, None for any other answer."""
    if response.status_code != 503:
        return None
    try:
        return max(0.0, float(response.headers.get("Retry-After", "")))
    except ValueError:
        return None


def _api_error(response: requests.Response) -> ApiError:
    try:
        error = response.json()["error"]
        message = error.get("message") or f"HTTP {response.status_code}"
        return ApiError(
            message, status=response.status_code, code=error.get("code", ""), details=error.get("details")
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        text = response.text.strip().splitlines()[0][:200] if response.text.strip() else ""
        message = f"the trainer API answered HTTP {response.status_code}"
        return ApiError(message + (f": {text}" if text else ""), status=response.status_code)


class LogCursor:
    """Reads an append-only log (`/events`, `/metrics`) page by page (`?after=N`), remembering
    where it stopped: `runs watch` and `logs -f` fetch again for what came since."""

    def __init__(self, client: ApiClient, path: str, after: int = 0):
        self.client, self.path, self.next = client, path, after

    def fetch(self) -> list[dict[str, Any]]:
        page = self.client.get(self.path, {"after": self.next})
        items = list(page.get("items") or [])
        self.next = page.get("next", self.next + len(items))
        return items


def _clean(params: dict[str, Any] | None) -> dict[str, Any] | None:
    if params is None:
        return None
    return {k: v for k, v in params.items() if v is not None}
