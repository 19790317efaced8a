"""Image files uploaded next to a dataset's JSONL (issue 17): the multipart form's `images` fields.

A row names an uploaded file by its file name where an image part's URL goes:

    {"type": "image_url", "image_url": {"url": "red-square.png"}}

On upload every named image is checked once (decoded whole and bounded as an inline image is:
shared/data/images.py) and written into its rows as the `data:` URL of its bytes, so the dataset is
stored as one self-contained JSONL, content-addressed by its digest like any dataset, and every
reader (SFT, GRPO, evaluations) reads it as it reads rows with inline images. Faults name the line
and field of the part (`messages[0].content[0].image_url.url`): a name no uploaded file has, a
file that is not an image or too large. The form is bounded: at most `MAX_IMAGE_FILES` files,
names of at most `MAX_NAME_CHARS` characters, each file at most `images.MAX_IMAGE_BYTES`, every
file named by some row, and the rows with their images written in at most the upload limit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, BinaryIO

from shared import reasons
from shared.data import images
from shared.errors import TooLarge, ValidationFailed
from shared.schemas import json_values

MAX_IMAGE_FILES = 256
MAX_NAME_CHARS = 255


@dataclass
class ImageFile:
    name: str
    data: bytes | None  # None: larger than images.MAX_IMAGE_BYTES
    url: str | None = None  # its data: URL, once checked
    problem: str | None = None  # why it cannot be used, once checked
    named: bool = False  # some row names it

    def checked(self) -> str | None:
        """Its data: URL, or None (with `problem` set) when it is not an image a row may hold."""
        if self.url is None and self.problem is None:
            try:
                if self.data is None:
                    raise images.ImageRefused("", reasons.image_file_too_large(images.MAX_IMAGE_BYTES))
                self.url = images.uploaded_image_url(self.data)
            except images.ImageRefused as refused:
                self.problem = refused.problem
        return self.url


def read_image_files(uploads: list[tuple[str | None, BinaryIO]]) -> dict[str, ImageFile]:
    """The form's image files by name, each read to at most one byte past the bound; 400 (field
    `images`) for too many files, a file without a usable name, or two files of one name."""
    if len(uploads) > MAX_IMAGE_FILES:
        raise ValidationFailed(reasons.image_files_too_many(len(uploads), MAX_IMAGE_FILES), details={"field": "images"})
    files: dict[str, ImageFile] = {}
    for name, stream in uploads:
        if not name or len(name) > MAX_NAME_CHARS or name.startswith("data:"):
            raise ValidationFailed(reasons.image_file_name_refused(name or "", MAX_NAME_CHARS),
                                   details={"field": "images"})
        if name in files:
            raise ValidationFailed(reasons.image_file_twice(name), details={"field": "images"})
        data = stream.read(images.MAX_IMAGE_BYTES + 1)
        files[name] = ImageFile(name, data if len(data) <= images.MAX_IMAGE_BYTES else None)
    return files


def _message_lists(row: dict[str, Any]) -> list[tuple[str, list]]:
    return [(key, row[key]) for key in ("messages", "prompt") if isinstance(row.get(key), list)]


def inline_images(data: bytes, files: dict[str, ImageFile], *,
                  max_bytes: int) -> tuple[bytes, list[dict[str, Any]]]:
    """The rows with each image part that names an uploaded file given that file's data: URL, and
    the faults found (`{line, field, problem}`). Lines that are not JSON objects are left as they
    are, for shared/datasets.validate_jsonl to name."""
    lines, faults = data.split(b"\n"), []
    for number, raw in enumerate(lines, start=1):
        if b"image_url" not in raw:
            continue
        try:
            row = json_values.loads(raw)
        except ValueError:
            continue
        if not isinstance(row, dict):
            continue
        changed = False
        for key, messages in _message_lists(row):
            for m, message in enumerate(messages):
                content = message.get("content") if isinstance(message, dict) else None
                for p, part in enumerate(content if images.is_parts(content) else []):
                    url = images.part_url(part) if isinstance(part, dict) and part.get("type") == "image_url" else None
                    if not isinstance(url, str) or url.startswith("data:"):
                        continue
                    field = f"{key}[{m}].content[{p}].image_url.url"
                    named = files.get(url)
                    if named is None:
                        faults.append({"line": number, "field": field,
                                       "problem": reasons.image_file_unknown(url, sorted(files))})
                        continue
                    named.named = True
                    if named.checked() is None:
                        faults.append({"line": number, "field": field,
                                       "problem": reasons.image_file_refused(url, named.problem)})
                        continue
                    part["image_url"]["url"], changed = named.url, True
        if changed:
            lines[number - 1] = json.dumps(row, ensure_ascii=False).encode()
    unnamed = [name for name, file in files.items() if not file.named]
    if unnamed and not faults:
        raise ValidationFailed(reasons.image_files_unnamed(unnamed), details={"field": "images", "files": unnamed})
    resolved = b"\n".join(lines)
    if len(resolved) > max_bytes:
        raise TooLarge(reasons.dataset_with_images_too_large(len(resolved), max_bytes),
                       details={"field": "images", "maxBytes": max_bytes})
    return resolved, faults
