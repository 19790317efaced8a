"""Request bodies sent without Content-Length (`Transfer-Encoding: chunked`) on the Flask half of
the API (issue 26): read to their end, as a body with a length is, and refused with a 413 the moment
they pass the route's limit (`request.max_content_length`: the deployment's `maxUploadBytes`, or a
snapshot archive's `maxSnapshotUploadBytes`), while they stream in.

Two parts, because werkzeug does neither by itself:
- `input_terminated(app)`: a2wsgi's `wsgi.input` reads the ASGI body until its last message, so it
  ends where the body ends; the environ says so (`wsgi.input_terminated`). Without it werkzeug
  reads a chunked body as empty, its guard against a WSGI server that cannot tell where one ends.
- `ApiRequest.stream`: werkzeug bounds such a body by stopping at the limit, and a JSON body cut
  there would read as "not JSON" (a 400); here the byte past the limit is a 413 instead.
"""

from __future__ import annotations

import io
from typing import IO

from flask import Request
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.utils import cached_property


def input_terminated(wsgi_app):
    """`wsgi_app` told that its input stream ends where the request body does (see above)."""
    def app(environ, start_response):
        environ["wsgi.input_terminated"] = True
        return wsgi_app(environ, start_response)

    return app


class BodyWithin(io.RawIOBase):
    """A body of unknown length read as it streams; RequestEntityTooLarge once it passes `limit`."""

    def __init__(self, stream: IO[bytes], limit: int):
        self._stream, self._limit, self._read = stream, limit, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        # one byte past what the limit leaves tells a body of exactly `limit` bytes from a longer one
        data = self._stream.read(min(len(buffer), self._limit - self._read + 1))
        self._read += len(data)
        if self._read > self._limit:
            raise RequestEntityTooLarge()
        buffer[:len(data)] = data
        return len(data)


class ApiRequest(Request):
    """Flask's request, with a chunked body bounded as it streams (BodyWithin)."""

    @cached_property
    def stream(self) -> IO[bytes]:
        limit = self.max_content_length
        if self.content_length is None and self.environ.get("wsgi.input_terminated") and limit is not None:
            return io.BufferedReader(BodyWithin(self.environ["wsgi.input"], limit))
        return super().stream
