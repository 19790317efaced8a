"""SFT rows with images (issue 17): chat rows whose messages hold image parts, for an image-text
model.

- `image_chat_row`: the row tokenized by the model's processor (shared/serving/image_inputs.py:
  each image expanded into its tokens), its loss mask cut at the same seams as a text row's
  (loss_masks.chat_row, with the processor's tokenization), its labels, and its images kept as their
  encoded bytes (a dataset column; decoded again per micro-batch);
- `ImageTextCollator`: a micro-batch padded on the right, with the pixel values of its images from
  the processor's image processor;
- `trl_prompt` / `openai_prompt`: a GRPO prompt with images as TRL's GRPOTrainer takes it (image
  placeholders and an `images` column) and back in the OpenAI shape a rollout server reads.

A row is never cut to `maxSeqLength`: cutting it could part an image from its tokens, so a row
longer than that is refused naming its line.
"""

from __future__ import annotations

import io
from typing import Any

from services.trainer_worker.engines.loss_masks import IGNORED, chat_row
from shared import reasons
from shared.data.images import data_url, decode_data_url, image_count, image_parts, part_url
from shared.errors import ValidationFailed, WorkFailed
from shared.serving.image_inputs import SEQUENCE_EXTRAS, encode, message_images, pixel_inputs

IMAGE_DATA = "image_data"  # the column of a row's encoded images, in order


def image_chat_row(processor, messages: list[dict[str, Any]], *, train_on_prompt: bool, max_length: int,
                   line: int | None = None) -> dict[str, Any]:
    """input_ids, labels (IGNORED outside the loss), the processor's sequence extras and the row's
    encoded images."""
    images = message_images(messages)

    def tokens(ms: list[dict[str, Any]], generation_prompt: bool) -> list[int]:
        seen = sum(1 for m in ms for _ in image_parts(m.get("content")))
        return encode(processor, ms, generation_prompt=generation_prompt, images=images[:seen])["input_ids"]

    whole = encode(processor, messages, generation_prompt=False, images=images)
    masked = chat_row(processor.tokenizer, messages, train_on_prompt=train_on_prompt,
                      conversation=lambda ms: tokens(ms, False), prompt=lambda ms: tokens(ms, True))
    if masked["input_ids"] != whole["input_ids"]:
        raise WorkFailed(reasons.PROCESSOR_TOKENIZED_TWO_WAYS)
    if len(whole["input_ids"]) > max_length:
        raise WorkFailed(reasons.image_row_too_long(line=line, tokens=len(whole["input_ids"]), max_length=max_length))
    row = {"input_ids": whole["input_ids"],
           "labels": [t if m else IGNORED for t, m in zip(whole["input_ids"], masked["assistant_masks"])],
           IMAGE_DATA: [decode_data_url(part_url(p)) for m in messages for p in image_parts(m.get("content"))]}
    row.update({key: whole[key] for key in SEQUENCE_EXTRAS if key in whole})
    return row


class ImageTextCollator:
    """A micro-batch of image_chat_row rows: input_ids, labels, attention_mask and the sequence
    extras padded on the right to the longest, and the pixel values of all its images in order."""

    def __init__(self, processor):
        self.processor = processor
        self.pad_token_id = processor.tokenizer.pad_token_id

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        import torch
        from PIL import Image

        length = max(len(e["input_ids"]) for e in examples)
        pads = {"input_ids": self.pad_token_id, "labels": IGNORED, "attention_mask": 0,
                **{key: 0 for key in SEQUENCE_EXTRAS if key in examples[0]}}
        batch: dict[str, Any] = {key: [] for key in pads}
        images = []
        for example in examples:
            size = len(example["input_ids"])
            values = {**{key: list(example[key]) for key in pads if key in example}, "attention_mask": [1] * size}
            for key, pad in pads.items():
                batch[key].append(values[key] + [pad] * (length - size))
            images += [Image.open(io.BytesIO(data)).convert("RGB") for data in example.get(IMAGE_DATA) or []]
        out = {key: torch.tensor(value) for key, value in batch.items()}
        out.update(pixel_inputs(self.processor, images))
        return out


def trl_prompt(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list]:
    """A GRPO prompt with image parts as TRL's GRPOTrainer takes one: each image part a `{"type":
    "image"}` placeholder, and the images (PIL, in order) for the row's `images` column, with which
    TRL fills the placeholders again and makes the pixel values of the update's forward pass."""
    pictures, out = message_images(messages), []
    for message in messages:
        content = message.get("content")
        if images_in(content):
            content = [{"type": "image"} if p.get("type") == "image_url" else p for p in content]
        out.append({**message, "content": content})
    return out, pictures


def images_in(content: Any) -> bool:
    return any(True for _ in image_parts(content))


def openai_prompt(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A prompt as TRL hands it to a rollout (its images filled in as `{"type": "image", "image":
    PIL}`) in the OpenAI shape a serving process reads: each image a PNG data: URL of its pixels
    (lossless, so the server's pixel values are the update's)."""
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = [{"type": "image_url", "image_url": {"url": _png_url(p["image"])}}
                       if isinstance(p, dict) and p.get("type") == "image" else p for p in content]
        out.append({"role": message["role"], "content": content})
    return out


def _png_url(image) -> str:
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG")
    return data_url(buffer.getvalue(), "image/png")


def has_images(rows: list[dict[str, Any]]) -> bool:
    """Whether any of SFT's rows (load_rows) holds an image: then it trains through the processor."""
    return any(image_count(row.get("messages")) for row in rows)


def image_rows(processor, rows: list[dict[str, Any]], *, train_on_prompt: bool, max_length: int,
               lines: list[int]) -> list[dict[str, Any]]:
    if rows and "messages" not in rows[0]:
        raise ValidationFailed(reasons.IMAGE_ROWS_ARE_CHAT, details={"field": "dataset"})
    return [image_chat_row(processor, row["messages"], train_on_prompt=train_on_prompt, max_length=max_length,
                           line=line) for row, line in zip(rows, lines)]
