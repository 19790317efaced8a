"""Regenerate the bundled sample SFT datasets (deterministic: same bytes every run).

- sample_sft.jsonl: two small chat tasks, reversing a word letter by letter and adding two small
  numbers. A few dozen LoRA steps on builtin/tiny-qwen3 visibly lower the loss on them (the tests').
- sample_reverse.jsonl and sample_reverse_heldout.jsonl: the quickstart's task, reversing a word,
  and held-out rows whose words are not among the training rows', on which an evaluation tells
  whether builtin/small-qwen3 learned the skill or only the rows it saw.

    python shared/data/make_sample.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

ROWS = 256
SEED = 20240607
LETTERS = "abcdefghijklmnopqrstuvwxyz"
TARGET = Path(__file__).with_name("sample_sft.jsonl")
REVERSE_ROWS, REVERSE_HELD_OUT, REVERSE_SEED = 4000, 100, 20261203
REVERSE_TARGET = Path(__file__).with_name("sample_reverse.jsonl")
REVERSE_HELD_OUT_TARGET = Path(__file__).with_name("sample_reverse_heldout.jsonl")


def make_rows(rows: int = ROWS, seed: int = SEED) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(rows):
        if i % 2 == 0:
            word = "".join(rng.choice(LETTERS) for _ in range(rng.randint(3, 6)))
            user, assistant = f"Reverse: {word}", word[::-1]
        else:
            a, b = rng.randint(0, 49), rng.randint(0, 49)
            user, assistant = f"Add: {a} + {b}", str(a + b)
        out.append(_chat(user, assistant))
    return out


def _chat(user: str, assistant: str) -> dict:
    return {"messages": [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]}


def make_reverse_rows(rows: int = REVERSE_ROWS, held_out: int = REVERSE_HELD_OUT,
                      seed: int = REVERSE_SEED) -> tuple[list[dict], list[dict]]:
    """(training rows, held-out rows): "Reverse: WORD" -> the word backwards, for words of 3 to 6
    lowercase letters; no held-out word is among the training words."""
    rng = random.Random(seed)

    def word() -> str:
        return "".join(rng.choice(LETTERS) for _ in range(rng.randint(3, 6)))

    training = [word() for _ in range(rows)]
    seen, unseen = set(training), []
    while len(unseen) < held_out:
        candidate = word()
        if candidate not in seen:
            seen.add(candidate)
            unseen.append(candidate)
    return ([_chat(f"Reverse: {w}", w[::-1]) for w in training],
            [_chat(f"Reverse: {w}", w[::-1]) for w in unseen])


def render(rows: list[dict]) -> str:
    return "".join(json.dumps(row, separators=(", ", ": ")) + "\n" for row in rows)


if __name__ == "__main__":
    TARGET.write_text(render(make_rows()))
    print(f"wrote {ROWS} rows to {TARGET}")
    training, held_out = make_reverse_rows()
    REVERSE_TARGET.write_text(render(training))
    REVERSE_HELD_OUT_TARGET.write_text(render(held_out))
    print(f"wrote {len(training)} rows to {REVERSE_TARGET} and {len(held_out)} to {REVERSE_HELD_OUT_TARGET}")
