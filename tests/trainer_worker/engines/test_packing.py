"""Sequence packing (engines/packing.py, `hyperparameters.packing`, issue 15): rows share sequences,
no row sees another, and the loss is taken over the same tokens as unpacked. On the real tiny model
and the real SFT engine."""

from __future__ import annotations

import json

import pytest
import torch

from services.trainer_worker.engines.loss_masks import IGNORED, chat_row, completion_row
from services.trainer_worker.engines.packing import (
    PACKED_MASK,
    PackedCollator,
    labelled,
    pack,
    positions,
    use_packed_masks,
)
from services.trainer_worker.engines.sft import run_sft
from shared.models.tiny_models import SAMPLE_DATASET
from tests.trainer_worker.doubles import RecordingReporter, make_job


@pytest.fixture(scope="module")
def model_and_tokenizer(model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32, local_files_only=True).eval()
    return model, AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)


def sample_rows(tokenizer, count: int) -> list[dict]:
    lines = SAMPLE_DATASET.read_text().splitlines()[:count]
    return [labelled(chat_row(tokenizer, json.loads(line)["messages"])) for line in lines]


def test_pack_keeps_every_token_and_label_and_restarts_positions(model_and_tokenizer):
    _, tokenizer = model_and_tokenizer
    rows = sample_rows(tokenizer, 40)
    sequences = pack(rows, 64)
    assert len(sequences) < len(rows) / 3  # the sample's rows are short: several per sequence
    assert all(len(s["input_ids"]) <= 64 for s in sequences)
    assert sum(len(s["input_ids"]) for s in sequences) == sum(len(r["input_ids"]) for r in rows)
    unpacked = []
    for s in sequences:
        starts = [i for i, p in enumerate(positions(s["seq_lengths"])) if p == 0]
        assert len(positions(s["seq_lengths"])) == len(s["input_ids"])
        for a, b in zip(starts, [*starts[1:], len(s["input_ids"])]):
            assert s["labels"][a] == IGNORED  # never predicted from the row before it
            unpacked.append((tuple(s["input_ids"][a:b]), tuple(s["labels"][a + 1:b])))
    assert sorted(unpacked) == sorted((tuple(r["input_ids"]), tuple(r["labels"][1:])) for r in rows)


def test_a_longer_row_is_cut_and_gets_a_sequence_of_its_own():
    rows = [{"input_ids": list(range(10)), "labels": list(range(10))}, {"input_ids": [1, 2], "labels": [1, 2]}]
    assert pack(rows, 6) == [{"input_ids": [0, 1, 2, 3, 4, 5], "labels": [IGNORED, 1, 2, 3, 4, 5], "seq_lengths": [6]},
                             {"input_ids": [1, 2], "labels": [IGNORED, 2], "seq_lengths": [2]}]
    assert positions([3, 2]) == [0, 1, 2, 0, 1]


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_no_packed_row_attends_to_another(model_and_tokenizer, attention):
    model, tokenizer = model_and_tokenizer
    model.set_attn_implementation(attention)
    rows = sample_rows(tokenizer, 12)
    sequences = pack(rows, 128)
    batch = PackedCollator(tokenizer.pad_token_id)(sequences)
    assert batch[PACKED_MASK].shape == (len(sequences), 1, batch["input_ids"].shape[1], batch["input_ids"].shape[1])
    with torch.no_grad():
        packed_logits = model(input_ids=batch["input_ids"], position_ids=batch["position_ids"],
                              attention_mask=batch[PACKED_MASK]).logits
        worst = 0.0
        for b, s in enumerate(sequences):
            starts = [i for i, p in enumerate(positions(s["seq_lengths"])) if p == 0]
            for a, e in zip(starts, [*starts[1:], len(s["input_ids"])]):
                alone = model(input_ids=torch.tensor([s["input_ids"][a:e]])).logits[0]
                worst = max(worst, float((packed_logits[b, a:e] - alone).abs().max()))
    model.set_attn_implementation("sdpa")
    print(f"{attention}: largest logit difference, packed vs alone: {worst:.2g}")
    assert worst < 1e-4


def test_packed_loss_is_the_unpacked_loss(model_and_tokenizer):
    """The hook hands the collator's mask to the model; the loss over a packed batch is the mean
    over the same target tokens as the rows one by one."""
    from copy import deepcopy

    model, tokenizer = model_and_tokenizer
    model = deepcopy(model)
    use_packed_masks(model)
    rows = sample_rows(tokenizer, 16)
    batch = PackedCollator(tokenizer.pad_token_id)(pack(rows, 256))
    with torch.no_grad():
        packed_loss = float(model(**batch).loss)
        total, count = 0.0, 0
        for row in rows:
            labels = torch.tensor([row["labels"]])
            out = model(input_ids=torch.tensor([row["input_ids"]]), labels=labels)
            n = int((labels[:, 1:] != IGNORED).sum())
            total, count = total + float(out.loss) * n, count + n
    assert packed_loss == pytest.approx(total / count, rel=1e-5)


def test_completion_rows_pack_with_their_completion_trained(model_and_tokenizer):
    _, tokenizer = model_and_tokenizer
    row = completion_row(tokenizer, "Add: 2 + 2 =", " 4")
    trained = tokenizer.decode([t for t, m in zip(row["input_ids"], row["assistant_masks"]) if m])
    assert trained == f" 4{tokenizer.eos_token}"
    assert all(completion_row(tokenizer, "Add: 2 + 2 =", " 4", train_on_prompt=True)["assistant_masks"])


def test_an_sft_run_with_packing_trains_on_fewer_sequences(model_dir, tmp_path):
    reporter = RecordingReporter()
    result = run_sft(make_job(model_dir, tmp_path, maxSteps=6, every_steps=None, packing=True, maxSeqLength=128),
                     reporter)
    assert result.final_step == 6 and result.last_loss < result.first_loss
    started = next(m for _, m in reporter.events if m.startswith("training builtin/tiny-qwen3"))
    assert "on 256 rows on cpu:0, packed into " in started and "sequences of at most 128 tokens" in started
    sequences = int(started.split("packed into ")[1].split(" ")[0])
    assert sequences < 256 / 4
    assert all(p["tokensPerSecond"] > 0 for p in reporter.points if "tokensPerSecond" in p)
