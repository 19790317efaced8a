"""Which tokens of an SFT row the loss is taken over (issue 15: assistant-only loss for any chat
template).

A chat row trains on its assistant turns only, by default. Templates rarely mark them (the tiny
model's has no `{% generation %}` markers, nor have real Qwen3 ones), so the mask is built by
rendering the conversation turn by turn, as Axolotl's `roles_to_train` and LLaMA-Factory's
`train_on_prompt: false` do: an assistant turn's tokens run from where the conversation before it,
rendered with the generation prompt, ends to where the conversation up to it ends. So they are its
content and the template's end of turn: the tokens an endpoint must produce, and the ones an
evaluation's loss is taken over (engines/evaluate.py `scored_tokens` takes this mask for a text
chat row, and `target_ids` cuts the same seam for an image-text row's last reply).

Each rendering is tokenized whole and compared with the whole conversation's tokens: a boundary is
the length of their common prefix, so a merge across a seam never shifts the mask.

`prompt`/`completion` rows are left to TRL, which trains on the completion (and the EOS it adds)
and masks the prompt the same way (its `completion_only_loss`), except when rows are packed
(packing.py), which needs them tokenized first: `completion_row` does what TRL does.
`hyperparameters.trainOnPrompt` turns both off: every token trains.
"""

from __future__ import annotations

from typing import Any

from shared.models.prompts import prompt_token_ids

IGNORED = -100  # the label of a token the loss skips (PyTorch's cross-entropy ignore_index)


def conversation_ids(tokenizer, messages: list[dict[str, Any]]) -> list[int]:
    """A whole conversation's tokens, built the way `prompt_token_ids` builds a chat prompt's (the
    template rendered, tokenized without adding special tokens), without the generation prompt."""
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def common_prefix(a: list[int], b: list[int]) -> int:
    """How many leading tokens `a` and `b` share: where a rendering's seam falls in the whole."""
    same = 0
    for x, y in zip(a, b):
        if x != y:
            break
        same += 1
    return same


def chat_row(tokenizer, messages: list[dict[str, Any]], *, train_on_prompt: bool = False,
             conversation=None, prompt=None) -> dict[str, list[int]]:
    """`input_ids` of the whole conversation and `assistant_masks` (1 where the loss is taken).

    `conversation(messages)` and `prompt(messages)` tokenize a conversation without and with the
    generation prompt (by default `conversation_ids` and `prompt_token_ids` over the tokenizer; an
    image-text row passes its processor's, which expand each image into its tokens: image_rows.py)."""
    conversation = conversation or (lambda ms: conversation_ids(tokenizer, ms))
    prompt = prompt or (lambda ms: prompt_token_ids(tokenizer, ms))
    whole = conversation(messages)
    if train_on_prompt:
        return {"input_ids": whole, "assistant_masks": [1] * len(whole)}
    mask = [0] * len(whole)
    for i, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        start = common_prefix(prompt(messages[:i]), whole) if i else 0
        end = common_prefix(conversation(messages[: i + 1]), whole)
        for position in range(start, end):
            mask[position] = 1
    return {"input_ids": whole, "assistant_masks": mask}


def completion_row(tokenizer, prompt: str, completion: str, *, train_on_prompt: bool = False) -> dict[str, list[int]]:
    """A prompt/completion row as TRL tokenizes it (the completion followed by the EOS token), with
    its mask: the completion's tokens, where the prompt's tokens stop being a prefix."""
    whole = tokenizer(prompt + completion, add_special_tokens=True)["input_ids"]
    if tokenizer.eos_token_id is not None:
        whole = [*whole, tokenizer.eos_token_id]
    if train_on_prompt:
        return {"input_ids": whole, "assistant_masks": [1] * len(whole)}
    start = common_prefix(prompt_token_ids(tokenizer, prompt), whole)
    return {"input_ids": whole, "assistant_masks": [0] * start + [1] * (len(whole) - start)}


def trained_tokens(row: dict[str, list[int]]) -> int:
    return sum(row["assistant_masks"])
