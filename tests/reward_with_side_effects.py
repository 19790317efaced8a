"""A deployment's reward module that does things when imported, as real ones do (load a model, open
files): it leaves a marker file (REWARD_SIDE_EFFECT_MARKER) and imports torch. The API must read its
function's signature without running it (shared.rewards.functions.static_signature); the worker imports it."""

import os
from pathlib import Path

if os.environ.get("REWARD_SIDE_EFFECT_MARKER"):
    Path(os.environ["REWARD_SIDE_EFFECT_MARKER"]).write_text("imported\n")

import torch  # noqa: E402,F401


def bonus_reward(completion, row, *, bonus=0.0):
    return float(len(completion)) + bonus
