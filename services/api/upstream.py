"""A small asyncio HTTP/1.1 client for the proxy's one kind of upstream request: a JSON POST to a
serving process, its answer relayed as it arrives (SPEC 6).

Why not a general client: the proxy sends nothing but `POST path` with a JSON body to addresses of
the form `http://HOST:PORT` it found in Redis, and must relay streamed answers chunk by chunk with
as little work per request as possible (bench/proxy_latency.py; docs/endpoints-benchmark.md). The
request goes out in one write; the answer is parsed by httptools (the C parser uvicorn uses), which
also undoes chunked transfer encoding.

Connections are kept per address and reused once an answer has been read to its end. A reused
connection that the serving process had closed (it restarted, or dropped an idle connection) fails
before a single byte of an answer arrives; the request is then sent once more on a new connection,
which is safe because nothing reached a server that had already closed it. A new connection that
is refused, or one closed or reset before the answer is complete, raises `ProcessGone` (the serving
process is likely dead: the proxy refuses with the endpoint's phase and marks it STARTING); an
answer that does not come in time or cannot be parsed raises `UpstreamUnreachable` (a 502).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import httptools

CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 600.0  # between two reads: a long generation streams, a long non-streamed one may take minutes
MAX_IDLE_PER_ADDRESS = 64
_READ_SIZE = 65536


class UpstreamUnreachable(Exception):
    """The serving process did not answer in time, or sent an answer that is not HTTP."""


class ProcessGone(UpstreamUnreachable):
    """The serving process refused the connection, or closed or reset it before its answer was
    complete: what a process that died (or is dying) does."""


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer = reader, writer

    def usable(self) -> bool:
        return not self.writer.is_closing() and not self.reader.at_eof()

    def close(self) -> None:
        self.writer.close()


class Response:
    """An answer being read: `status` and `headers` at once, the body from `chunks()` (or `read()`).
    Read to its end, the connection goes back to the pool; `close()` before that drops it."""

    def __init__(self, pool: Pool, address: tuple[str, int], conn: _Connection, parser, state: _ParseState):
        self._pool, self._address, self._conn, self._parser, self._state = pool, address, conn, parser, state
        self.status: int = parser.get_status_code()
        self.headers: dict[str, str] = state.headers

    async def chunks(self) -> AsyncIterator[bytes]:
        state = self._state
        try:
            while True:
                if state.body:
                    data, state.body = b"".join(state.body), []
                    yield data
                if state.complete:
                    break
                try:
                    data = await asyncio.wait_for(self._conn.reader.read(_READ_SIZE), READ_TIMEOUT_S)
                except TimeoutError as exc:
                    raise UpstreamUnreachable(f"no more of the answer within {READ_TIMEOUT_S:g}s") from exc
                except OSError as exc:
                    raise ProcessGone(f"reading the answer failed: {exc}") from exc
                if not data:
                    raise ProcessGone("the serving process closed the connection mid-answer")
                self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            raise UpstreamUnreachable(f"the serving process sent a malformed answer: {exc}") from exc
        finally:
            self._finish()

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])

    def close(self) -> None:
        self._finish()

    def _finish(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        self._state.parser = None  # the parser holds the state: no cycle left behind
        if self._state.complete and self._state.keep_alive and conn.usable():
            self._pool.give_back(self._address, conn)
        else:
            conn.close()


class _ParseState:
    """What httptools' callbacks collect for one answer."""

    def __init__(self):
        self.headers: dict[str, str] = {}
        self.body: list[bytes] = []
        self.headers_done = self.complete = False
        self.keep_alive = False
        self.parser = None

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self.headers_done = True
        self.keep_alive = self.parser.should_keep_alive()  # asked here: once the answer is complete it is reset

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.complete = True


class Pool:
    def __init__(self):
        self._idle: dict[tuple[str, int], list[_Connection]] = defaultdict(list)

    def give_back(self, address: tuple[str, int], conn: _Connection) -> None:
        idle = self._idle[address]
        if len(idle) < MAX_IDLE_PER_ADDRESS:
            idle.append(conn)
        else:
            conn.close()

    def close(self) -> None:
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()

    async def post(self, base_url: str, path: str, body: bytes, *, api_key: str | None = None) -> Response:
        """POST `body` (JSON) to `base_url + path`, with `api_key` as its bearer token when given (the
        serving process's own secret); returns once the answer's status and headers have arrived.
        Raises `ProcessGone` if the connection is refused or dropped before an answer came,
        `UpstreamUnreachable` if none comes in time."""
        parts = urlsplit(base_url)
        address = (parts.hostname or "127.0.0.1", parts.port or 80)
        auth = f"Authorization: Bearer {api_key}\r\n" if api_key else ""
        head = (f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nAccept-Encoding: identity\r\n{auth}\r\n").encode("latin-1")
        idle = self._idle[address]
        while idle:
            conn = idle.pop()
            if not conn.usable():
                conn.close()
                continue
            try:
                return await self._exchange(address, conn, head + body)
            except _NothingCame:
                conn.close()  # closed by the serving process while idle: try a new connection
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(*address), CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:  # refused, or nothing listens there any more
            raise ProcessGone(f"cannot connect to {base_url}: {exc or type(exc).__name__}") from exc
        try:
            return await self._exchange(address, _Connection(reader, writer), head + body)
        except _NothingCame as exc:
            raise ProcessGone(f"{base_url} closed the connection without answering") from exc

    async def _exchange(self, address: tuple[str, int], conn: _Connection, request: bytes) -> Response:
        state = _ParseState()
        parser = state.parser = httptools.HttpResponseParser(state)
        received = False
        try:
            conn.writer.write(request)
            while not state.headers_done:
                data = await asyncio.wait_for(conn.reader.read(_READ_SIZE), READ_TIMEOUT_S)
                if not data:
                    conn.close()
                    if received:
                        raise ProcessGone("the serving process closed the connection mid-answer")
                    raise _NothingCame()
                received = True
                parser.feed_data(data)
        except (ConnectionResetError, BrokenPipeError) as exc:
            conn.close()
            if received:
                raise ProcessGone(f"the connection broke: {exc}") from exc
            raise _NothingCame() from exc
        except TimeoutError as exc:
            conn.close()
            raise UpstreamUnreachable(f"no answer within {READ_TIMEOUT_S:g}s") from exc
        except OSError as exc:
            conn.close()
            raise ProcessGone(f"no answer: {exc}") from exc
        except httptools.HttpParserError as exc:
            conn.close()
            raise UpstreamUnreachable(f"the serving process sent a malformed answer: {exc}") from exc
        return Response(self, address, conn, parser, state)


class _NothingCame(Exception):
    """The connection closed before any byte of an answer: the request was not taken."""
