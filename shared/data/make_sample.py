"""Regenerate sample_sft.jsonl, the bundled sample SFT dataset (deterministic: same bytes every run).

Two small, learnable chat tasks: reversing a word letter by letter, and adding two small numbers.
A few dozen LoRA steps on the built-in tiny model visibly lower the loss on them.

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
        out.append({"messages": [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]})
    return out


def render(rows: list[dict]) -> str:
    return "".join(json.dumps(row, separators=(", ", ": ")) + "\n" for row in rows)


if __name__ == "__main__":
    TARGET.write_text(render(make_rows()))
    print(f"wrote {ROWS} rows to {TARGET}")
