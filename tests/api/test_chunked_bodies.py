"""Request bodies sent without Content-Length (`Transfer-Encoding: chunked`) on the Flask half of the
API (issue 26; services/api/asgi.py): read whole, as a body with a length is, and bounded by the
route's limit while they stream in. Real chunked requests (http.client, chunk by chunk) against the
real served API (uvicorn, a2wsgi, Flask)."""

from __future__ import annotations

import http.client
import io
import json
import select
from dataclasses import replace
from urllib.parse import urlsplit

from shared import reasons
from tests.api.conftest import CHAT_ROWS, served
from tests.api.test_snapshot_import import imported_dirs, snapshot_dir, tar_of
from tests.conftest import ADMIN_TOKEN

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


class Sent:
    """What a chunked request got: its answer, and how many body bytes went out before it came."""

    def __init__(self, status: int, body: bytes, sent: int):
        self.status, self.body, self.sent = status, body, sent

    def json(self):
        return json.loads(self.body)


def send_chunked(url: str, path: str, headers: dict, chunks) -> Sent:
    """POST the chunks as a chunked body; stops sending as soon as an answer arrives (a 413 comes
    while the body still streams), then reads it."""
    address = urlsplit(url)
    conn = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
    conn.putrequest("POST", path, skip_accept_encoding=True)
    for name, value in {**headers, "Transfer-Encoding": "chunked"}.items():
        conn.putheader(name, value)
    conn.endheaders()
    sent = 0
    try:
        for chunk in chunks:
            if select.select([conn.sock], [], [], 0)[0]:
                break  # answered before the body ended
            conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sent += len(chunk)
        else:
            conn.send(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass
    answer = conn.getresponse()
    body = answer.read()
    conn.close()
    return Sent(answer.status, body, sent)


def pieces(data: bytes, size: int = 1000):
    return (data[i:i + size] for i in range(0, len(data), size))


def test_a_chunked_json_body_is_read_whole(api_url, dataset):
    plan = json.dumps({"model": "builtin/tiny-qwen3", "dataset": dataset,
                       "hyperparameters": {"maxSteps": 2, "batchSize": 2}}).encode()
    resp = send_chunked(api_url, "/v1/runs", {**AUTH, "Content-Type": "application/json"}, pieces(plan, 17))
    assert resp.status == 201, resp.body
    assert resp.json()["plan"]["hyperparameters"]["maxSteps"] == 2


def test_a_chunked_dataset_upload_is_read_whole(api_url):
    boundary = "chunked-boundary"
    form = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"d.jsonl\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode() + CHAT_ROWS + f"\r\n--{boundary}--\r\n".encode()
    resp = send_chunked(api_url, "/v1/datasets", {**AUTH, "Content-Type": f"multipart/form-data; boundary={boundary}"},
                        pieces(form, 100))
    assert resp.status == 201, resp.body
    assert resp.json()["rows"] == 4


def test_a_chunked_body_past_the_limit_is_a_413_while_it_streams(api_url, config):
    """The test deployment takes bodies of 200,000 bytes; 64 MB sent chunk by chunk is answered 413
    once the limit is passed, long before the rest would have been sent (`sent`)."""
    limit = config.max_upload_bytes
    total = 64 * 1024 * 1024
    chunks = (b"[" + b"0," * 32_767 + b"0" if i == 0 else b",0" * 32_768 for i in range(total // 65_536))
    resp = send_chunked(api_url, "/v1/runs", {**AUTH, "Content-Type": "application/json"}, chunks)
    assert resp.status == 413 and resp.json()["error"] == {
        "code": "too_large", "details": {"maxBytes": limit}, "message": reasons.request_too_large(limit)}
    assert resp.sent < total // 4  # answered as the body streamed, not once it had all arrived
    print(f"\n413 after {resp.sent:,} of {total:,} bytes sent (limit {limit:,})")


def test_a_snapshot_archive_streams_in_chunked_and_one_past_its_limit_is_a_413(config, tmp_path):
    archive = tar_of(snapshot_dir(tmp_path), gz=True)
    headers = {**AUTH, "Content-Type": "application/gzip"}
    with served(config) as url:
        resp = send_chunked(url, "/v1/snapshots/import?name=snap.tar.gz", headers, pieces(archive, 512))
        assert resp.status == 201, resp.body
        assert resp.json()["readable"] == {"weights": True, "trainingState": True}
    before = imported_dirs(config)
    small = replace(config, max_snapshot_upload_bytes=len(archive) // 2)
    with served(small) as url:
        resp = send_chunked(url, "/v1/snapshots/import?name=snap.tar.gz", headers, pieces(archive, 512))
    assert resp.status == 413 and resp.json()["error"]["message"] == reasons.request_too_large(len(archive) // 2)
    assert imported_dirs(config) == before


def test_a_body_with_a_length_reads_as_before(api_url, http, dataset):
    resp = http.post(f"{api_url}/v1/datasets", headers=AUTH, files={"file": ("d.jsonl", io.BytesIO(CHAT_ROWS))})
    assert resp.status_code == 201
    resp = http.post(f"{api_url}/v1/runs", headers=AUTH, json={"model": "builtin/tiny-qwen3", "dataset": dataset,
                                                               "hyperparameters": {"maxSteps": 2, "batchSize": 2}})
    assert resp.status_code == 201
