"""Regenerate sample_image_text.jsonl, the bundled sample image-text dataset (deterministic: same
bytes every run, on any machine: the PNGs are written here with zlib, not by an image library).

Each row shows one coloured shape (a square, a disc or a triangle, of one of four colours, at a
size and place drawn from a seeded generator) on a white 32x32 image and asks
"What colour is the shape?"; the answer is the colour's name. A few dozen LoRA steps of the
built-in image-text model (shared/models/tiny_vision_model.py) visibly lower the loss on it.

    python shared/data/make_sample_images.py
"""

from __future__ import annotations

import base64
import json
import random
import struct
import zlib
from pathlib import Path

ROWS = 64
SEED = 20260417
SIDE = 32  # pixels; the built-in image-text model sees 32x32 images
COLOURS = {"red": (220, 30, 30), "green": (30, 170, 60), "blue": (40, 70, 220), "yellow": (235, 200, 20)}
SHAPES = ("square", "disc", "triangle")
QUESTION = "What colour is the shape?"
TARGET = Path(__file__).with_name("sample_image_text.jsonl")
WHITE = (255, 255, 255)


def _inside(shape: str, x: int, y: int, left: int, top: int, size: int) -> bool:
    u, v = x - left, y - top
    if not (0 <= u < size and 0 <= v < size):
        return False
    if shape == "square":
        return True
    if shape == "disc":
        r = size / 2
        return (u + 0.5 - r) ** 2 + (v + 0.5 - r) ** 2 <= r * r
    return abs(u + 0.5 - size / 2) <= (v + 0.5) / 2  # a triangle standing on its base


def draw(shape: str, colour: tuple[int, int, int], left: int, top: int, size: int) -> list[list[tuple[int, int, int]]]:
    return [[colour if _inside(shape, x, y, left, top, size) else WHITE for x in range(SIDE)] for y in range(SIDE)]


def png(pixels: list[list[tuple[int, int, int]]]) -> bytes:
    """An 8-bit RGB PNG of `pixels` (rows of (r, g, b)), filter 0 on every row."""
    height, width = len(pixels), len(pixels[0])
    raw = b"".join(b"\x00" + bytes(c for pixel in row for c in pixel) for row in pixels)

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def make_rows(rows: int = ROWS, seed: int = SEED) -> list[dict]:
    rng = random.Random(seed)
    names = list(COLOURS)
    out = []
    for i in range(rows):
        colour = names[i % len(names)]
        shape = SHAPES[rng.randrange(len(SHAPES))]
        size = rng.randint(12, 24)
        left, top = rng.randint(0, SIDE - size), rng.randint(0, SIDE - size)
        url = "data:image/png;base64," + base64.b64encode(png(draw(shape, COLOURS[colour], left, top, size))).decode()
        out.append({"messages": [
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                         {"type": "text", "text": QUESTION}]},
            {"role": "assistant", "content": colour},
        ]})
    return out


def render(rows: list[dict]) -> str:
    return "".join(json.dumps(row, separators=(", ", ": ")) + "\n" for row in rows)


if __name__ == "__main__":
    TARGET.write_text(render(make_rows()))
    print(f"wrote {ROWS} rows to {TARGET}")
