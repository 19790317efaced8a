"""Datasets with images (issue 17): OpenAI content parts in chat messages, each image decoded and
bounded on upload, every fault named by line and field; the bundled sample regenerates byte for
byte and shows what it says."""

from __future__ import annotations

import base64
import io
import json

from PIL import Image

from shared.data import images
from shared.data import make_sample_images
from shared.data.datasets import IMAGE_TEXT, TEXT, validate_jsonl
from shared.models.tiny_vision_model import SAMPLE_DATASET


def png(width=8, height=8, colour=(255, 0, 0)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(out, format="PNG")
    return out.getvalue()


def row_with(*parts, answer="red") -> dict:
    return {"messages": [{"role": "user", "content": list(parts)}, {"role": "assistant", "content": answer}]}


def image_part(url: str) -> dict:
    return {"type": "image_url", "image_url": {"url": url}}


def jsonl(*rows) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in rows)


def test_rows_with_images_are_image_text_and_rows_without_are_text():
    good = row_with(image_part(images.data_url(png())), {"type": "text", "text": "What colour is the shape?"})
    report = validate_jsonl(jsonl(good, good))
    assert (report.rows, report.format, report.modality, report.faults) == (2, "chat", IMAGE_TEXT, [])
    text = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                         {"role": "assistant", "content": "hello"}]}
    assert validate_jsonl(jsonl(text)).modality == TEXT


def test_every_fault_names_its_line_and_field(monkeypatch):
    monkeypatch.setattr(images, "MAX_IMAGE_PIXELS", 32 * 32)
    garbage = "data:image/png;base64," + base64.b64encode(b"not a png at all").decode()
    truncated = "data:image/png;base64," + base64.b64encode(png()[:40]).decode()
    rows = [
        row_with(image_part(garbage)),
        row_with(image_part("data:image/png;base64,@@@")),
        row_with(image_part("https://example.com/cat.png")),
        row_with(image_part(images.data_url(png(), "text/plain"))),
        row_with(image_part(images.data_url(png(64, 64)))),
        row_with({"type": "image_url"}),
        row_with({"type": "text"}),
        row_with({"type": "audio", "audio": "x"}),
        {"messages": [{"role": "user", "content": []}, {"role": "assistant", "content": "a"}]},
        row_with(image_part(truncated)),
        {"messages": [{"role": "user", "content": 7}, {"role": "assistant", "content": "a"}]},
    ]
    report = validate_jsonl(jsonl(*rows))
    assert report.rows == 0
    assert report.faults == [
        {"line": 1, "field": "messages[0].content[0].image_url.url", "problem": "is not an image Pillow can decode"},
        {"line": 2, "field": "messages[0].content[0].image_url.url", "problem": "is not valid base64"},
        {"line": 3, "field": "messages[0].content[0].image_url.url",
         "problem": "must be a data: URL of an image (data:image/png;base64,...); other URLs are not fetched"},
        {"line": 4, "field": "messages[0].content[0].image_url.url",
         "problem": "is a text/plain data: URL; images are image/png, image/jpeg, image/gif, image/webp"},
        {"line": 5, "field": "messages[0].content[0].image_url.url",
         "problem": "is an image of 64x64 pixels; the most is 1024 pixels"},
        {"line": 6, "field": "messages[0].content[0].image_url", "problem": "must be an object with a url"},
        {"line": 7, "field": "messages[0].content[0].text", "problem": "must be a string"},
        {"line": 8, "field": "messages[0].content[0].type", "problem": "must be one of text, image_url"},
        {"line": 9, "field": "messages[0].content", "problem": "must be a string or a non-empty list of content parts"},
        {"line": 10, "field": "messages[0].content[0].image_url.url", "problem": "is not an image Pillow can decode"},
        {"line": 11, "field": "messages[0].content", "problem": "must be a string or a list of content parts"},
    ]


def test_image_bytes_and_image_count_are_bounded(monkeypatch):
    monkeypatch.setattr(images, "MAX_IMAGE_BYTES", 50)
    big = png(16, 16, (1, 2, 3))
    assert len(big) > 50
    report = validate_jsonl(jsonl(row_with(image_part(images.data_url(big)))))
    assert report.faults == [{"line": 1, "field": "messages[0].content[0].image_url.url",
                              "problem": "holds an image larger than 50 bytes"}]
    monkeypatch.setattr(images, "MAX_IMAGE_BYTES", 4 * 1024 * 1024)
    monkeypatch.setattr(images, "MAX_IMAGES_PER_ROW", 2)
    small = image_part(images.data_url(png()))
    report = validate_jsonl(jsonl(row_with(small, small, small)))
    assert report.faults == [{"line": 1, "field": "messages", "problem": "holds 3 images; the most in one row is 2"}]


def test_the_sample_regenerates_byte_for_byte_and_shows_what_it_says():
    assert make_sample_images.render(make_sample_images.make_rows()) == SAMPLE_DATASET.read_text()
    report = validate_jsonl(SAMPLE_DATASET.read_bytes())
    assert (report.rows, report.format, report.modality, report.fault_count) == (64, "chat", IMAGE_TEXT, 0)
    answers = set()
    for line in SAMPLE_DATASET.read_text().splitlines():
        user, assistant = json.loads(line)["messages"]
        picture, question = user["content"]
        assert question == {"type": "text", "text": "What colour is the shape?"}
        image = images.open_image(picture)
        assert image.size == (32, 32)
        pixels = image.tobytes()
        coloured = {tuple(pixels[i:i + 3]) for i in range(0, len(pixels), 3)} - {(255, 255, 255)}
        assert coloured == {make_sample_images.COLOURS[assistant["content"]]}  # the answer is the shape's colour
        answers.add(assistant["content"])
    assert answers == set(make_sample_images.COLOURS)


def test_content_text_joins_the_text_parts():
    parts = [image_part("data:image/png;base64,"), {"type": "text", "text": "a "}, {"type": "text", "text": "b"}]
    assert images.content_text(parts) == "a b" and images.content_text("s") == "s"
