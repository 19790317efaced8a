"""A prompt as a model reads it, the same for training, evaluation and serving: its tokens
(`prompt_token_ids`: chat messages through the model's own chat template, as vLLM builds them),
whether the model reads images, the tokens that stand for an image's features, and a prompt's
other inputs (pixel values) as tensors. Nothing here loads torch at import time."""

from __future__ import annotations

from typing import Any


def prompt_token_ids(tokenizer, prompt: str | list[dict[str, Any]]) -> list[int]:
    """A prompt's tokens, as every part of the trainer builds them (the built-in server's two APIs,
    evaluations, GRPO rollouts), and as vLLM's do: chat messages through the model's own chat
    template with its generation prompt, tokenized without adding special tokens (the template
    writes the family's bos where it has one: Llama 3, Gemma); a text prompt tokenized with them
    (so it starts with that bos too)."""
    if isinstance(prompt, list):
        text = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
        return tokenizer(text, add_special_tokens=False)["input_ids"]
    return tokenizer(prompt, add_special_tokens=True)["input_ids"]


def reads_images(model) -> bool:
    """An image-text model: its config has a vision tower (Gemma 3, Qwen-VL, Llava and their kin)."""
    return getattr(getattr(model, "config", None), "vision_config", None) is not None


def placeholder_token_ids(model) -> list[int]:
    """The tokens an image-text model reads as an image's (or a video's) features, from its config
    (Gemma 3's `<image_soft_token>`, Qwen-VL's `<|image_pad|>`; not the processor's `image_token`,
    which for Gemma 3 is the `<start_of_image>` the text holds): text never holds them, and a
    completion holding one would fail the model's count of image features on the next forward
    pass (a GRPO update reads its rollouts' completions)."""
    if not reads_images(model):
        return []
    config = model.config
    ids = [getattr(config, name, None) for name in ("image_token_id", "video_token_id")]
    return sorted({i for i in ids if isinstance(i, int)})


def model_extras(extras: dict[str, Any] | None, device, *, dtype) -> dict[str, Any]:
    """A prompt's other inputs as tensors on the model's device (pixel values in the model's dtype)."""
    import torch

    out = {}
    for key, value in (extras or {}).items():
        tensor = value if isinstance(value, torch.Tensor) else torch.tensor(value)
        out[key] = tensor.to(device=device, dtype=dtype if tensor.is_floating_point() else tensor.dtype)
    return out
