"""Images inside chat messages (SPEC 2.2, issue 17): the OpenAI content-part shape, decoded and bounded.

A message's `content` is a string, or a list of parts:

    {"type": "text", "text": "what colour is the shape?"}
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}

An image travels inside its row as a `data:` URL (PNG, JPEG, GIF or WebP). Every image is bounded:
its encoded bytes (`MAX_IMAGE_BYTES`), its pixels (`MAX_IMAGE_PIXELS`, checked from the header
before any pixel is decoded) and the number of images in one row (`MAX_IMAGES_PER_ROW`).

Decoding uses Pillow only (no torch, no transformers): the API validates uploads with it, and the
engines and the serving process turn the same parts into PIL images with `open_image`.
"""

from __future__ import annotations

import base64
import binascii
import io
import re
from typing import Any, Iterator

from shared import reasons

MAX_IMAGE_BYTES = 4 * 1024 * 1024  # one encoded image
MAX_IMAGE_PIXELS = 4096 * 4096  # width x height of one image
MAX_IMAGES_PER_ROW = 16
IMAGE_MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
PART_TYPES = ("text", "image_url")

_DATA_URL = re.compile(r"^data:(?P<media>[\w.+-]+/[\w.+-]+);base64,(?P<data>.*)$", re.DOTALL)


class ImageRefused(ValueError):
    """An image part that cannot be used; `field` is the path below the part (e.g. `image_url.url`)."""

    def __init__(self, field: str, problem: str):
        super().__init__(problem)
        self.field = field
        self.problem = problem


def is_parts(content: Any) -> bool:
    """A content that is a list of parts rather than a string."""
    return isinstance(content, list)


def image_parts(content: Any) -> Iterator[dict[str, Any]]:
    """The image parts of a message's content, in order (none for string content)."""
    if is_parts(content):
        for part in content:
            if isinstance(part, dict) and part.get("type") == "image_url":
                yield part


def content_text(content: Any) -> str:
    """A content's text: the string itself, or its text parts joined (images leave no text)."""
    if isinstance(content, str):
        return content
    if is_parts(content):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return "" if content is None else str(content)


def image_count(messages: Any) -> int:
    if not isinstance(messages, list):
        return 0
    return sum(1 for m in messages if isinstance(m, dict) for _ in image_parts(m.get("content")))


def part_url(part: dict[str, Any]) -> Any:
    image_url = part.get("image_url")
    return image_url.get("url") if isinstance(image_url, dict) else None


def decode_data_url(url: Any) -> bytes:
    """The encoded image bytes of a `data:image/...;base64,` URL, bounded; ImageRefused otherwise."""
    field = "image_url.url"
    if not isinstance(url, str) or not url:
        raise ImageRefused(field, reasons.IMAGE_NOT_A_DATA_URL)
    match = _DATA_URL.match(url)
    if match is None:
        raise ImageRefused(field, reasons.IMAGE_URL_NOT_FETCHED)
    if match["media"].lower() not in IMAGE_MEDIA_TYPES:
        raise ImageRefused(field, reasons.image_media_type_refused(match["media"], list(IMAGE_MEDIA_TYPES)))
    encoded = match["data"]
    if len(encoded) > (MAX_IMAGE_BYTES * 4) // 3 + 4:
        raise ImageRefused(field, reasons.image_too_large(MAX_IMAGE_BYTES))
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise ImageRefused(field, reasons.IMAGE_NOT_BASE64) from None
    if len(data) > MAX_IMAGE_BYTES:
        raise ImageRefused(field, reasons.image_too_large(MAX_IMAGE_BYTES))
    return data


def check_image(data: bytes) -> tuple[int, int]:
    """(width, height) of an encoded image that Pillow can decode whole and that is within
    MAX_IMAGE_PIXELS; ImageRefused naming the problem otherwise."""
    from PIL import Image

    field = "image_url.url"
    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
            if width * height > MAX_IMAGE_PIXELS:
                raise ImageRefused(field, reasons.image_too_many_pixels(width, height, MAX_IMAGE_PIXELS))
            image.load()  # a header alone is not an image: decode every pixel
    except ImageRefused:
        raise
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError):
        raise ImageRefused(field, reasons.IMAGE_NOT_DECODABLE) from None
    return width, height


_MEDIA_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


def uploaded_image_url(data: bytes) -> str:
    """The data: URL of an uploaded image file (services/api/dataset_files.py), checked as an inline
    image is, its media type from its own header (not its name); ImageRefused otherwise."""
    from PIL import Image

    if len(data) > MAX_IMAGE_BYTES:
        raise ImageRefused("image_url.url", reasons.image_file_too_large(MAX_IMAGE_BYTES))
    check_image(data)
    with Image.open(io.BytesIO(data)) as image:
        media_type = _MEDIA_TYPES.get(image.format or "")
    if media_type is None:
        raise ImageRefused("image_url.url", reasons.image_format_refused(image.format, list(IMAGE_MEDIA_TYPES)))
    return data_url(data, media_type)


def open_image(part: dict[str, Any]):
    """The PIL image (RGB) of a validated image part."""
    from PIL import Image

    data = decode_data_url(part_url(part))
    with Image.open(io.BytesIO(data)) as image:
        return image.convert("RGB")


def content_faults(content: Any, field: str) -> list[tuple[str, str]]:
    """(field, problem) for each fault of a list-of-parts content (a string content has none)."""
    if not is_parts(content):
        return []
    if not content:
        return [(field, "must be a string or a non-empty list of content parts")]
    faults = []
    for i, part in enumerate(content):
        where = f"{field}[{i}]"
        if not isinstance(part, dict):
            faults.append((where, 'must be an object with a type ("text" or "image_url")'))
            continue
        kind = part.get("type")
        if kind not in PART_TYPES:
            faults.append((f"{where}.type", f"must be one of {', '.join(PART_TYPES)}"))
        elif kind == "text" and not isinstance(part.get("text"), str):
            faults.append((f"{where}.text", "must be a string"))
        elif kind == "image_url":
            if not isinstance(part.get("image_url"), dict):
                faults.append((f"{where}.image_url", "must be an object with a url"))
                continue
            try:
                check_image(decode_data_url(part_url(part)))
            except ImageRefused as refused:
                faults.append((f"{where}.{refused.field}", refused.problem))
    return faults


def data_url(data: bytes, media_type: str = "image/png") -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"
