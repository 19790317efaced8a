"""The proxy's HTTP client (services/api/upstream.py) against a scripted HTTP peer
(tests/api/http_peer.py): kept-open connections, a connection the peer closed while idle, chunked
answers relayed as they arrive, answers broken off, nothing listening."""

from __future__ import annotations

import asyncio

import pytest

from services.api.upstream import Pool, UpstreamUnreachable
from shared.process.ports import free_port
from tests.api.http_peer import HttpPeer


@pytest.fixture
def peer():
    peer = HttpPeer()
    yield peer
    peer.close()


def run(coroutine):
    return asyncio.run(coroutine)


def test_a_connection_is_kept_open_and_reused(peer):
    async def go():
        pool = Pool()
        answers = []
        for _ in range(3):
            answer = await pool.post(peer.url, "/plain", b'{"model": "x"}')
            answers.append((answer.status, answer.headers["content-type"], await answer.read()))
        pool.close()
        return answers

    assert run(go()) == [(200, "application/json", b'{"model": "served", "ok": 1}')] * 3
    assert peer.connections == 1
    assert peer.requests == [("/plain", b'{"model": "x"}')] * 3


def test_a_connection_the_peer_closed_while_idle_is_replaced_and_the_request_sent_once(peer):
    async def go():
        pool = Pool()
        first = await pool.post(peer.url, "/close-after", b"{}")
        await first.read()
        await asyncio.sleep(0.2)  # the peer has closed it by now
        second = await pool.post(peer.url, "/plain", b"{}")
        data = await second.read()
        pool.close()
        return data

    assert run(go()) == b'{"model": "served", "ok": 1}'
    assert peer.connections == 2
    assert [path for path, _ in peer.requests] == ["/close-after", "/plain"]


def test_a_chunked_answer_is_relayed_chunk_by_chunk_before_it_ends(peer):
    async def go():
        pool = Pool()
        answer = await pool.post(peer.url, "/stream", b"{}")
        chunks = answer.chunks()
        first = await chunks.__anext__()  # arrives while the peer still holds the rest back
        peer.release.set()
        rest = [chunk async for chunk in chunks]
        again = await (await pool.post(peer.url, "/plain", b"{}")).read()  # read to the end: reused
        pool.close()
        return answer.headers, first, b"".join(rest), again

    headers, first, rest, again = run(go())
    assert headers["content-type"] == "text/event-stream"
    assert first == b'data: {"model": "served", "n": 1}\n\n'
    assert rest == b'data: {"model": "served", "n": 2}\n\ndata: [DONE]\n\n'
    assert again == b'{"model": "served", "ok": 1}' and peer.connections == 1


def test_an_answer_broken_off_raises_and_its_connection_is_not_reused(peer):
    async def go():
        pool = Pool()
        answer = await pool.post(peer.url, "/break", b"{}")
        with pytest.raises(UpstreamUnreachable, match="closed the connection mid-answer"):
            await answer.read()
        await (await pool.post(peer.url, "/plain", b"{}")).read()
        pool.close()

    run(go())
    assert peer.connections == 2


def test_an_answer_closed_before_its_end_drops_the_connection(peer):
    async def go():
        pool = Pool()
        answer = await pool.post(peer.url, "/stream", b"{}")
        await answer.chunks().__anext__()
        answer.close()
        peer.release.set()
        await (await pool.post(peer.url, "/plain", b"{}")).read()
        pool.close()

    run(go())
    assert peer.connections == 2


def test_nothing_listening_is_unreachable():
    async def go():
        with pytest.raises(UpstreamUnreachable, match="cannot connect"):
            await Pool().post(f"http://127.0.0.1:{free_port()}", "/plain", b"{}")

    run(go())
