"""Sequence packing for SFT (`hyperparameters.packing`, issue 15): several tokenized rows share one
training sequence, so a micro-batch holds far fewer padding tokens, and no row attends to another.

- `pack`: rows (input_ids + labels) into sequences of at most `max_length` tokens, best fit
  decreasing, each with `seq_lengths` (its rows' lengths, the column TRL keeps for its own packing);
- `PackedCollator`: a micro-batch of packed sequences, padded to its longest, with position ids
  that start again at 0 for every row and a 4-D additive
  attention mask that is causal within each row and closed between rows (and to padding). The
  position ids alone would not do: on CPU (sdpa, eager) transformers lets every token see the whole
  sequence; only flash-attention's varlen kernels read row boundaries from them. Measured on the
  tiny model: a row's logits packed behind another differ by 6.1 with position ids alone, by 2e-6
  with this mask (tests/trainer_worker/engines/test_packing.py);
- `use_packed_masks`: the model takes that mask from the batch's `packed_attention_mask` (the
  Trainer counts `attention_mask` as tokens seen, and a 4-D mask is no count), so `tokensPerSecond`
  still counts real tokens only.

The first token of each packed row is not a target: it would be predicted from the row before it.
In an unpacked row it never is either, so a packed run takes its loss over the same tokens.
"""

from __future__ import annotations

from typing import Any

from services.trainer_worker.engines.loss_masks import IGNORED

PACKED_MASK = "packed_attention_mask"


def labelled(row: dict[str, list[int]]) -> dict[str, list[int]]:
    """input_ids + labels from input_ids + assistant_masks."""
    return {"input_ids": row["input_ids"],
            "labels": [t if m else IGNORED for t, m in zip(row["input_ids"], row["assistant_masks"])]}


def pack(rows: list[dict[str, list[int]]], max_length: int) -> list[dict[str, list[int]]]:
    """Rows (each input_ids + labels, cut to `max_length`) into as few sequences as best fit
    decreasing finds; rows keep their tokens and labels, each sequence gets its position ids."""
    cut = [{key: row[key][:max_length] for key in ("input_ids", "labels")} for row in rows]
    order = sorted(range(len(cut)), key=lambda i: (-len(cut[i]["input_ids"]), i))
    bins: list[list[int]] = []
    room: list[int] = []
    for i in order:
        size = len(cut[i]["input_ids"])
        best = min((b for b in range(len(bins)) if room[b] >= size), key=lambda b: room[b], default=None)
        if best is None:
            bins.append([i])
            room.append(max_length - size)
        else:
            bins[best].append(i)
            room[best] -= size
    packed = []
    for members in bins:
        sequence = {"input_ids": [], "labels": [], "seq_lengths": []}
        for i in sorted(members):
            tokens, labels = cut[i]["input_ids"], cut[i]["labels"]
            sequence["input_ids"] += tokens
            sequence["labels"] += [IGNORED, *labels[1:]]
            sequence["seq_lengths"].append(len(tokens))
        packed.append(sequence)
    return packed


def positions(seq_lengths: list[int]) -> list[int]:
    """Position ids of a packed sequence: 0, 1, ... again for each of its rows."""
    return [p for length in seq_lengths for p in range(length)]


class PackedCollator:
    """A micro-batch of packed sequences: input_ids, labels, position_ids padded on the right, and
    `packed_attention_mask` (batch, 1, length, length): 0 where a token may look, float32's
    minimum where it may not."""

    def __init__(self, pad_token_id: int):
        self.pad_token_id = pad_token_id

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        dtype = torch.float32  # use_packed_masks casts it to the model's dtype
        length = max(len(e["input_ids"]) for e in examples)
        batch = {"input_ids": [], "labels": [], "position_ids": []}
        masks = []
        for example in examples:
            size, pad = len(example["input_ids"]), length - len(example["input_ids"])
            batch["input_ids"].append(list(example["input_ids"]) + [self.pad_token_id] * pad)
            batch["labels"].append(list(example["labels"]) + [IGNORED] * pad)
            batch["position_ids"].append(positions(example["seq_lengths"]) + [0] * pad)
            lengths = torch.tensor(example["seq_lengths"])
            row = torch.repeat_interleave(torch.arange(len(lengths)), lengths)  # 0, 0, ..., 1, 1, ...: which row
            allowed = torch.zeros(length, length, dtype=torch.bool)
            allowed[:size, :size] = (row[:, None] == row[None, :]) & torch.ones(size, size, dtype=torch.bool).tril()
            allowed[size:, size:] = torch.eye(pad, dtype=torch.bool)  # padding sees itself: no empty softmax row
            masks.append(torch.zeros(length, length, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min))
        out = {key: torch.tensor(value) for key, value in batch.items()}
        out[PACKED_MASK] = torch.stack(masks)[:, None]
        return out


def use_packed_masks(model) -> None:
    """Let `model` take the collator's mask as its attention mask (a forward pre-hook)."""

    def rename(_module, args, kwargs):
        if PACKED_MASK in kwargs:
            mask = kwargs.pop(PACKED_MASK)
            kwargs["attention_mask"] = mask.to(next(model.parameters()).dtype)
        return args, kwargs

    model.register_forward_pre_hook(rename, with_kwargs=True)
