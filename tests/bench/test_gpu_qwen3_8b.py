"""What bench/gpu_qwen3_8b.py builds and counts, checked against the real objects on CPU: the
published Qwen3-8B shape (its parameter count, on the meta device: no memory), the tokenizer of that
vocabulary, the rows' token counts, and the FLOPs formula's parts against PEFT's own count of what
it trains. (The check itself runs in tests/bench/test_gpu_check.py's dry run.)"""

from __future__ import annotations

import json

import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, Qwen3Config

from bench.gpu_qwen3_8b import DRY_SIZES, QWEN3_8B, RANK, TINY, _parameters, build_tokenizer, write_rows
from bench.gpu_throughput import lora_training_flops, mean_context


def test_the_shape_is_qwen3_8b_with_its_8_19b_parameters():
    config = Qwen3Config(**QWEN3_8B)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    assert model.num_parameters() == _parameters(config) == 8_190_735_360
    assert (config.rope_parameters["rope_theta"], config.max_position_embeddings, config.tie_word_embeddings,
            config.rms_norm_eps) == (1e6, 40960, False, 1e-6)


def test_the_tokenizer_has_exactly_the_vocabulary_and_qwens_chat_template():
    tokenizer = build_tokenizer(QWEN3_8B["vocab_size"])
    assert len(tokenizer) == 151_936
    assert tokenizer.convert_tokens_to_ids(f"w{151_936 - 8}") == 151_935  # the last word is the last id
    text = tokenizer.apply_chat_template([{"role": "user", "content": "w1 w2"}], tokenize=False,
                                         add_generation_prompt=True)
    assert text == "<|im_start|>user\nw1 w2<|im_end|>\n<|im_start|>assistant\n"
    assert tokenizer.unk_token_id not in tokenizer(text)["input_ids"]


def test_each_row_has_the_token_count_it_was_written_with(tmp_path):
    tokenizer = build_tokenizer(TINY["vocab_size"])
    rows_file = tmp_path / "rows.jsonl"
    lengths = write_rows(rows_file, DRY_SIZES)
    rows = [json.loads(line) for line in rows_file.read_text().splitlines()]
    for row, length in zip(rows, lengths, strict=True):
        ids = tokenizer(row["prompt"] + row["completion"])["input_ids"]
        assert len(ids) + 1 == length  # and the EOS the engine and TRL append
        assert tokenizer.unk_token_id not in ids
    assert min(lengths) == DRY_SIZES.seq // 8 and max(lengths) <= DRY_SIZES.seq
    assert len(set(lengths)) > len(lengths) // 2  # spread, not one length


def test_the_flops_count_the_weights_peft_freezes_and_trains():
    config = Qwen3Config(**TINY)
    model = AutoModelForCausalLM.from_config(config)
    frozen = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))  # the head included
    peft_model = get_peft_model(model, LoraConfig(r=RANK, lora_alpha=2 * RANK, target_modules="all-linear"))
    trained = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)  # every linear but the head
    flops = lora_training_flops(config, rank=RANK, context=10.0)
    assert (flops["frozenLinear"], flops["lora"]) == (frozen, trained)
    attention = 4 * TINY["num_hidden_layers"] * TINY["num_attention_heads"] * TINY["head_dim"] * 10.0
    assert flops["perToken"] == 4 * frozen + 6 * trained + 3 * attention


def test_the_8b_figures_per_token():
    flops = lora_training_flops(Qwen3Config(**QWEN3_8B), rank=16, context=692.0)
    assert flops["frozenLinear"] == 7_568_097_280 and flops["lora"] == 43_646_976
    # 4 x 7.57G frozen + 6 x 43.6M LoRA + 12 x 36 layers x 4096 x 692 keys: 31.76 GFLOP a token
    assert flops["perToken"] == 30_272_389_120 + 261_881_856 + 1_224_474_624


def test_a_token_sees_itself_and_what_came_before_it_in_its_row():
    assert mean_context([1, 3]) == (1 + (1 + 2 + 3)) / 4
    assert mean_context([2048]) == pytest.approx(1024.5)
