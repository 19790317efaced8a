"""Image files uploaded next to a dataset's JSONL (issue 17; services/api/dataset_files.py): rows name
them by file name, the stored rows hold them as data: URLs (the same bytes, and so the same digest,
as the rows written with their images inline), and every fault names its line and field."""

from __future__ import annotations

import io
import json
import random

from PIL import Image

from services.api.dataset_files import MAX_IMAGE_FILES
from shared import reasons
from shared.data import images
from shared.data.images import decode_data_url
from shared.models.tiny_vision_model import SAMPLE_DATASET
from shared.store.artifacts import dataset_key

ROWS = [json.loads(line) for line in SAMPLE_DATASET.read_text().splitlines()[:3]]


def by_name(rows: list[dict]) -> tuple[bytes, dict[str, bytes]]:
    """The rows with each image replaced by a file name, and the files."""
    files, named = {}, []
    for i, row in enumerate(rows):
        row = json.loads(json.dumps(row))
        part = row["messages"][0]["content"][0]
        files[f"shape-{i}.png"] = decode_data_url(part["image_url"]["url"])
        part["image_url"]["url"] = f"shape-{i}.png"
        named.append(json.dumps(row))
    return "\n".join(named).encode() + b"\n", files


def upload(client, headers, data: bytes, files: dict[str, bytes]):
    return client.post("/v1/datasets", headers=headers, content_type="multipart/form-data", data={
        "file": (io.BytesIO(data), "shapes.jsonl"),
        "images": [(io.BytesIO(content), name) for name, content in files.items()]})


def test_rows_naming_uploaded_files_are_stored_with_the_images_written_in(client, admin, config):
    data, files = by_name(ROWS)
    resp = upload(client, admin, data, files)
    assert resp.status_code == 201, resp.json
    doc = resp.json
    assert (doc["rows"], doc["format"], doc["modality"]) == (3, "chat", "image-text")
    inline = client.post("/v1/datasets", headers=admin, content_type="multipart/form-data", data={
        "file": (io.BytesIO("".join(json.dumps(r) + "\n" for r in ROWS).encode()), "inline.jsonl")}).json
    assert doc["digest"] == inline["digest"]  # content-addressed: the same rows, the same file
    stored = (config.artifact_root / dataset_key(doc["digest"])).read_text().splitlines()
    assert [json.loads(line) for line in stored] == ROWS


def test_every_fault_names_its_line_and_field_and_nothing_is_stored(client, admin, monkeypatch):
    monkeypatch.setattr(images, "MAX_IMAGE_BYTES", 1000)  # the test deployment takes uploads of 200 kB
    data, files = by_name(ROWS)
    files["shape-1.png"] = b"not an image"
    files["shape-2.png"] = b"\x89PNG" + b"0" * 997  # one byte over
    lines = data.decode().splitlines()
    lines.append(lines[0].replace("shape-0.png", "missing.png"))
    resp = upload(client, admin, ("\n".join(lines) + "\n").encode(), files)
    assert resp.status_code == 400, resp.json
    error = resp.json["error"]
    field = "messages[0].content[0].image_url.url"
    assert error["details"]["faults"] == [
        {"line": 2, "field": field, "problem": reasons.image_file_refused("shape-1.png",
                                                                          "is not an image Pillow can decode")},
        {"line": 3, "field": field, "problem": reasons.image_file_refused(
            "shape-2.png", "is larger than 1000 bytes")},
        {"line": 4, "field": field, "problem": reasons.image_file_unknown(
            "missing.png", ["shape-0.png", "shape-1.png", "shape-2.png"])},
    ]
    assert error["message"] == (f"dataset line 2, field {field}: names image file shape-1.png, which is not an "
                                "image Pillow can decode (and 2 more)")
    assert reasons.image_file_unknown("missing.png", ["a.png"]) == (
        "names image file missing.png, which was not uploaded with the rows (uploaded: a.png)")
    assert client.get("/v1/datasets", headers=admin).json["items"] == []


def test_the_form_is_bounded(client, admin):
    data, files = by_name(ROWS[:1])
    unnamed = upload(client, admin, data, {**files, "extra.png": files["shape-0.png"]})
    assert unnamed.status_code == 400 and unnamed.json["error"]["message"] == (
        "image files no row names: extra.png; a row names a file by its name as an image part's url")
    assert unnamed.json["error"]["details"]["field"] == "images"
    many = client.post("/v1/datasets", headers=admin, content_type="multipart/form-data", data={
        "file": (io.BytesIO(data), "d.jsonl"),
        "images": [(io.BytesIO(b"x"), f"{i}.png") for i in range(MAX_IMAGE_FILES + 1)]})
    assert many.status_code == 400 and many.json["error"]["message"] == (
        f"the upload holds {MAX_IMAGE_FILES + 1} image files; the most is {MAX_IMAGE_FILES}")
    twice = client.post("/v1/datasets", headers=admin, content_type="multipart/form-data", data={
        "file": (io.BytesIO(data), "d.jsonl"),
        "images": [(io.BytesIO(b"x"), "shape-0.png"), (io.BytesIO(b"y"), "shape-0.png")]})
    assert twice.status_code == 400 and twice.json["error"]["message"] == (
        "two image files are named shape-0.png; each file needs a name of its own")
    long_name = "x" * 256
    named_badly = upload(client, admin, data, {long_name: b"x"})
    assert named_badly.status_code == 400 and named_badly.json["error"]["message"] == (
        f'image file name "{long_name}" is refused: a name is 1 to 255 characters and does not start with `data:`')
    noise = Image.frombytes("RGB", (24, 24), random.Random(7).randbytes(24 * 24 * 3))
    buffer = io.BytesIO()
    noise.save(buffer, format="PNG")
    row = data.decode().splitlines()[0]
    many_rows = ("\n".join([row] * 200) + "\n").encode()  # 200 rows naming one 1.7 kB image: 460 kB written in
    too_large = upload(client, admin, many_rows, {"shape-0.png": buffer.getvalue()})
    assert too_large.status_code == 413, too_large.json
    message = too_large.json["error"]["message"]
    assert message == reasons.dataset_with_images_too_large(int(message.split()[8]), 200000)
    assert reasons.dataset_with_images_too_large(70, 64) == (
        "the rows with their images written in are 70 bytes; the most is 64")
    assert client.get("/v1/datasets", headers=admin).json["items"] == []
