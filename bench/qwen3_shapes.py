"""Qwen3-shaped models with random weights and a locally built tokenizer, for bench/gpu_calibrate.py.

Nothing is downloaded. The shapes are the published configs of Qwen/Qwen3-0.6B, -1.7B and -8B
(hidden size, FFN width, layers, attention and KV heads, head dim 128, tied embeddings for the two
small ones, 40,960 positions, rope theta 1e6) with an embedding of 151,936 rows. The tokenizer has
Qwen3's layout: 151,643 byte-level BPE tokens (merges trained on a small English corpus, then
synthetic merges up to that count), then Qwen3's 26 special tokens from id 151,643 (`<|endoftext|>`
151643, `<|im_start|>` 151644, `<|im_end|>` 151645, ...), 151,669 in all, and a ChatML template.
Its merges are not Qwen3's, so texts tokenize to other ids and lengths than with the real tokenizer;
what the measurements depend on (vocabulary, embedding and logits sizes, special ids) is Qwen3's.

The weights are drawn on the device they are built on (normal, std 0.02, as Qwen3's initializer),
in the precision asked for, and saved as safetensors: the engines load them from the directory,
as they load any model. `--dry-run` shapes (`tiny-*`) have the same layout at toy sizes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

QWEN3_SPECIAL_TOKENS = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
    "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>",
    "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
    "<think>", "</think>",
)
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
# Qwen3's published generation_config.json (sampling defaults of the instruct models).
GENERATION = {"do_sample": True, "temperature": 0.6, "top_k": 20, "top_p": 0.95}


@dataclass(frozen=True)
class Shape:
    name: str
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    tied: bool
    regular_tokens: int  # byte-level BPE tokens before the special ones
    vocab: int  # embedding rows (Qwen pads past the tokenizer's ids)
    max_positions: int = 40960

    @property
    def pad_id(self) -> int:  # <|endoftext|>
        return self.regular_tokens

    @property
    def eos_id(self) -> int:  # <|im_end|>
        return self.regular_tokens + 2

    def parameters(self) -> int:
        """Qwen3's parameter count for this shape: embeddings (and an untied head), per layer the
        attention projections, q/k norms over a head, the gated MLP and two norms; a final norm."""
        attention = 2 * self.hidden * self.heads * self.head_dim + 2 * self.hidden * self.kv_heads * self.head_dim
        layer = attention + 2 * self.head_dim + 3 * self.hidden * self.intermediate + 2 * self.hidden
        embeddings = self.vocab * self.hidden * (1 if self.tied else 2)
        return embeddings + self.layers * layer + self.hidden


QWEN3 = 151643, 151936  # regular tokens, embedding rows
SHAPES: dict[str, Shape] = {
    "qwen3-0.6b": Shape("qwen3-0.6b", 1024, 3072, 28, 16, 8, 128, True, *QWEN3),
    "qwen3-1.7b": Shape("qwen3-1.7b", 2048, 6144, 28, 16, 8, 128, True, *QWEN3),
    "qwen3-8b": Shape("qwen3-8b", 4096, 12288, 36, 32, 8, 128, False, *QWEN3),
    # the dry run's stand-ins, same layout at toy sizes (CPU, seconds)
    "tiny-0.6b": Shape("tiny-0.6b", 64, 128, 2, 4, 2, 16, True, 1000, 1088, 2048),
    "tiny-1.7b": Shape("tiny-1.7b", 96, 192, 2, 4, 2, 24, True, 1000, 1088, 2048),
    "tiny-8b": Shape("tiny-8b", 128, 256, 3, 4, 2, 32, False, 1000, 1088, 2048),
}
DRY_RUN = {"qwen3-0.6b": "tiny-0.6b", "qwen3-1.7b": "tiny-1.7b", "qwen3-8b": "tiny-8b"}


def _corpus() -> list[str]:
    from shared.models.tiny_models import FIXED_CORPUS, SAMPLE_DATASET

    lines = [FIXED_CORPUS]
    for raw in SAMPLE_DATASET.read_text().splitlines():
        lines.extend(m["content"] for m in json.loads(raw)["messages"])
    return lines


def build_tokenizer(regular_tokens: int, max_positions: int):
    """A byte-level BPE tokenizer of exactly `regular_tokens` tokens, then Qwen3's special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    trained = Tokenizer(models.BPE())
    trained.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trained.train_from_iterator(_corpus(), trainer=trainers.BpeTrainer(
        vocab_size=min(regular_tokens, 2000), min_frequency=2, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    model = json.loads(trained.to_str())["model"]
    vocab: dict[str, int] = {}
    for token, _ in sorted(model["vocab"].items(), key=lambda item: item[1]):
        vocab[token] = len(vocab)
    merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    # Synthetic merges up to the size asked for: each token so far followed by each byte symbol.
    alphabet, order, i = sorted(pre_tokenizers.ByteLevel.alphabet()), list(vocab), 0
    while len(vocab) < regular_tokens:
        for symbol in alphabet:
            token = order[i] + symbol
            if token not in vocab and len(vocab) < regular_tokens:
                vocab[token] = len(vocab)
                merges.append((order[i], symbol))
                order.append(token)
        i += 1
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(list(QWEN3_SPECIAL_TOKENS))
    wrapped = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                      additional_special_tokens=["<|im_start|>"], model_max_length=max_positions)
    wrapped.chat_template = CHAT_TEMPLATE
    return wrapped


def config_of(shape: Shape):
    from transformers import Qwen3Config

    return Qwen3Config(
        vocab_size=shape.vocab, hidden_size=shape.hidden, intermediate_size=shape.intermediate,
        num_hidden_layers=shape.layers, num_attention_heads=shape.heads, num_key_value_heads=shape.kv_heads,
        head_dim=shape.head_dim, max_position_embeddings=shape.max_positions, rope_theta=1_000_000.0,
        rms_norm_eps=1e-6, tie_word_embeddings=shape.tied, initializer_range=0.02,
        bos_token_id=shape.pad_id, eos_token_id=shape.eos_id, pad_token_id=shape.pad_id,
        layer_types=["full_attention"] * shape.layers,
    )


def build_model(shape: Shape, target: Path, *, device: str, precision: str, tokenizer_dir: Path | None = None) -> int:
    """Write a model of `shape` with random weights drawn on `device` in `precision` into `target`,
    with the tokenizer (built, or copied from `tokenizer_dir` where one of the same layout was
    built before); returns its parameter count (checked against the shape's)."""
    import shutil

    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig

    from shared.models.loading import PRECISION_DTYPES

    target.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config_of(shape), dtype=getattr(torch, PRECISION_DTYPES[precision]))
    parameters = sum(p.numel() for p in model.parameters())
    if parameters != shape.parameters():
        raise RuntimeError(f"{shape.name}: built {parameters} parameters, the shape says {shape.parameters()}")
    model.generation_config = GenerationConfig(bos_token_id=shape.pad_id, eos_token_id=[shape.eos_id, shape.pad_id],
                                               pad_token_id=shape.pad_id, **GENERATION)
    model.save_pretrained(str(target), safe_serialization=True)
    del model
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    if tokenizer_dir is not None:
        for path in tokenizer_dir.iterdir():
            if path.name.startswith(("tokenizer", "special_tokens", "chat_template")):
                shutil.copy2(path, target / path.name)
    else:
        build_tokenizer(shape.regular_tokens, shape.max_positions).save_pretrained(str(target))
    return parameters
