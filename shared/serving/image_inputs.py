"""Chat messages with image parts as an image-text model's inputs (issue 17), the one way SFT's loss
mask, evaluations and the built-in server build them.

A conversation is rendered through the model's own chat template (each image part becomes the
template's image placeholder, e.g. Gemma 3's `<start_of_image>`), and the model's processor
tokenizes it with the conversation's images, expanding each placeholder into the tokens that
image takes (its soft tokens), without adding special tokens: the template writes the bos, as
`prompt_token_ids` does for text. The pixel values of a batch are made from the images by the
processor's image processor (`pixel_inputs`).
"""

from __future__ import annotations

from typing import Any

from shared.data.images import image_parts, open_image

# Sequence-aligned outputs of a processor, besides input_ids and attention_mask, that the model
# reads (Gemma 3: which tokens are image tokens; Qwen-VL: mm_token_type_ids).
SEQUENCE_EXTRAS = ("token_type_ids", "mm_token_type_ids")


def message_images(messages: list[dict[str, Any]]) -> list:
    """The PIL images of a conversation's image parts, in order."""
    return [open_image(part) for message in messages for part in image_parts(message.get("content"))]


def encode(processor, messages: list[dict[str, Any]], *, generation_prompt: bool,
           images: list | None = None) -> dict[str, list[int]]:
    """`input_ids` (and any SEQUENCE_EXTRAS) of a conversation, images expanded; with
    `generation_prompt`, ending in the open assistant turn. `images`: the conversation's, if
    already decoded."""
    text = processor.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation_prompt)
    images = message_images(messages) if images is None else images
    out = processor(text=[text], images=[images] if images else None, add_special_tokens=False)
    encoded = {"input_ids": list(out["input_ids"][0])}
    for key in SEQUENCE_EXTRAS:
        if key in out:
            encoded[key] = list(out[key][0])
    return encoded


def pixel_inputs(processor, images: list) -> dict[str, Any]:
    """The image tensors of `images`, in order, that the model reads (pixel_values and, e.g., Qwen-VL's
    image_grid_thw: the image processor's outputs the processor names as model inputs; not
    Gemma 3's num_crops); empty for none."""
    if not images:
        return {}
    wanted = set(processor.model_input_names)
    return {key: value for key, value in processor.image_processor(images=images, return_tensors="pt").items()
            if key in wanted}
