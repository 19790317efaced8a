"""Built-in tiny base models, created offline and deterministically (SPEC 1: "Built-in tiny models").

A built-in model is a real architecture at toy size, with its own byte-level tokenizer and a
Qwen-style chat template. Two kinds:

- `tiny-qwen3`, the smallest (~50k parameters), for tests where speed matters: a BPE tokenizer
  trained on the bundled sample data plus a fixed ASCII corpus. Its weights are random, so LoRA
  lowers its loss but cannot teach it a skill that holds on prompts it has not seen.
- `small-qwen3` (~0.5M parameters), the quickstart's: one token per byte, so a word is spelled out
  letter by letter, and wide enough that a LoRA adapter over its random weights learns a task that
  generalises: 500 steps on the bundled reverse-a-word sample reverse words it never saw
  (exact match ~0.9 on the held-out rows, against 0 for the base; docs/builtin-models.md). It is written
in the ordinary Hugging Face layout (config.json, model.safetensors, tokenizer files,
generation_config.json), so `shared.models` loads it with the same code as a real catalog model.

The catalog facts of a built-in model (parameter count, precisions, GPU counts, LoRA target modules,
generation config) follow from its spec alone (`builtin_facts`), so the API describes one without
building it or importing torch; a build writes the same facts to `trainer_model.json` after
checking them against the model it made. Builds happen where models load: the trainer worker,
the endpoint manager and `training up`. Two builds of the same name give byte-identical weights.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared import reasons
from shared.artifacts import ArtifactRoot, join, model_key
from shared.errors import NotFound

METADATA_FILE = "trainer_model.json"
DATA = Path(__file__).with_name("data")
SAMPLE_DATASET = DATA / "sample_sft.jsonl"

PAD_TOKEN = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS = [PAD_TOKEN, IM_START, IM_END]

# Qwen's format: <|im_start|>role\ncontent<|im_end|>\n per message, then an open assistant turn
# when the caller asks for a generation prompt.
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

# Trained into the tokenizer beside the sample data so that ordinary English and every printable
# ASCII character get sensible merges (byte-level BPE encodes any text regardless).
FIXED_CORPUS = (
    "The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs.\n"
    "You are a helpful assistant. Answer the question briefly and correctly.\n"
    "What is the answer? The answer is yes. The answer is no. Please reverse this word.\n"
    "Hello, world! How are you today? I am fine, thank you. Let us add the numbers together.\n"
    "0123456789 " + "".join(chr(c) for c in range(32, 127)) + "\n"
)


@dataclass(frozen=True)
class TinyModelSpec:
    """The shape of one built-in model. Sizes are deliberately toy: a build takes seconds on a CPU."""

    architecture: str
    vocab_size: int
    hidden_size: int
    layers: int
    heads: int
    kv_heads: int
    intermediate_size: int
    max_positions: int
    seed: int
    # Wider than a real model's 0.02: the base is untrained, and with embeddings (tied to the output
    # layer) that small, its logits are nearly flat whatever a LoRA adapter does, so fine-tuning
    # could barely lower the loss. With these, 30 LoRA steps on the sample take it from ~7.2 to ~3.7.
    init_std: float
    embedding_std: float
    lora_target_modules: tuple[str, ...]
    # "bpe": merges trained on the sample data (`vocab_size` tokens); "bytes": one token per byte,
    # no merges (the special tokens and the 256 bytes: `vocab_size` must be BYTE_VOCAB_SIZE).
    tokenizer: str = "bpe"


BUILTIN_MODELS: dict[str, TinyModelSpec] = {
    "tiny-qwen3": TinyModelSpec(
        architecture="Qwen3ForCausalLM",
        vocab_size=512,
        hidden_size=64,
        layers=2,
        heads=4,
        kv_heads=2,
        intermediate_size=128,
        max_positions=2048,
        seed=1234,
        init_std=0.1,
        embedding_std=0.15,
        lora_target_modules=("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
    ),
    "small-qwen3": TinyModelSpec(
        architecture="Qwen3ForCausalLM",
        vocab_size=len(SPECIAL_TOKENS) + 256,
        hidden_size=128,
        layers=3,
        heads=4,
        kv_heads=2,
        intermediate_size=256,
        max_positions=2048,
        seed=4321,
        init_std=0.1,
        embedding_std=0.15,
        lora_target_modules=("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
        tokenizer="bytes",
    ),
}
BYTE_VOCAB_SIZE = len(SPECIAL_TOKENS) + 256

GENERATION_DEFAULTS = {"do_sample": False, "max_new_tokens": 64}
# The tokenizer trainer gives the special tokens the first ids, in this order.
PAD_ID, EOS_ID = SPECIAL_TOKENS.index(PAD_TOKEN), SPECIAL_TOKENS.index(IM_END)


def _vision(name: str):
    """The module that builds `name` when it is a built-in image-text model (shared/tiny_vision_model.py)."""
    from shared import tiny_vision_model

    return tiny_vision_model if name in tiny_vision_model.VISION_MODELS else None


def _spec(name: str) -> TinyModelSpec:
    try:
        return BUILTIN_MODELS[name]
    except KeyError:
        from shared.tiny_vision_model import VISION_MODELS

        names = ", ".join(sorted([*BUILTIN_MODELS, *VISION_MODELS]))
        raise NotFound(
            reasons.builtin_model_unknown(name, names),
            details={"builtin": name},
        ) from None


def _training_text() -> list[str]:
    lines = [FIXED_CORPUS]
    for raw in SAMPLE_DATASET.read_text().splitlines():
        row = json.loads(raw)
        lines.extend(f"{IM_START}{m['role']}\n{m['content']}{IM_END}\n" for m in row["messages"])
    return lines


def _bpe_tokenizer(spec: TinyModelSpec):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    trainer = trainers.BpeTrainer(
        vocab_size=spec.vocab_size,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(_training_text(), trainer=trainer)
    return tok


def _byte_tokenizer(spec: TinyModelSpec):
    """One token per byte (byte-level BPE with no merges): the special tokens first, then the 256
    byte symbols in a fixed order, so every build gives the same ids."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    if spec.vocab_size != BYTE_VOCAB_SIZE:
        raise RuntimeError(f"a byte tokenizer has {BYTE_VOCAB_SIZE} tokens; the spec says {spec.vocab_size}")
    vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS)}
    for symbol in sorted(pre_tokenizers.ByteLevel.alphabet()):
        vocab[symbol] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.add_special_tokens(SPECIAL_TOKENS)
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    return tok


def _build_tokenizer(spec: TinyModelSpec):
    from tokenizers import decoders
    from transformers import PreTrainedTokenizerFast

    tok = _byte_tokenizer(spec) if spec.tokenizer == "bytes" else _bpe_tokenizer(spec)
    tok.decoder = decoders.ByteLevel()
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=IM_END,
        pad_token=PAD_TOKEN,
        additional_special_tokens=[IM_START],
        model_max_length=spec.max_positions,
    )
    wrapped.chat_template = CHAT_TEMPLATE
    return wrapped


def parameter_count(spec: TinyModelSpec) -> int:
    """The parameters of the Qwen3 model `spec` describes: tied embeddings, per layer the attention
    projections (no biases), q/k norms over a head, the gated MLP and two RMS norms, a final norm."""
    head_dim = spec.hidden_size // spec.heads
    attention = 2 * spec.hidden_size * spec.heads * head_dim + 2 * spec.hidden_size * spec.kv_heads * head_dim
    layer = attention + 2 * head_dim + 3 * spec.hidden_size * spec.intermediate_size + 2 * spec.hidden_size
    return spec.vocab_size * spec.hidden_size + spec.layers * layer + spec.hidden_size


def spec_shape(spec: Any) -> dict[str, Any]:
    """A built-in model's shape as the catalog shows every model's (shared/model_facts.py SHAPE_KEYS)."""
    return {"hiddenSize": spec.hidden_size, "layers": spec.layers, "heads": spec.heads, "kvHeads": spec.kv_heads,
            "intermediateSize": spec.intermediate_size, "vocabSize": spec.vocab_size,
            "maxPositions": spec.max_positions, "tiedEmbeddings": True}


def builtin_facts(name: str) -> dict[str, Any]:
    """The catalog facts of a built-in model, from its spec alone (no build, no torch)."""
    if _vision(name):
        return _vision(name).builtin_facts(name)
    spec = _spec(name)
    return {
        "builtin": name,
        "architecture": spec.architecture,
        **spec_shape(spec),
        "chatTemplate": CHAT_TEMPLATE,
        "parameters": parameter_count(spec),
        "precisions": ["fp32", "bf16"],
        "gpuCounts": [1, 2],
        "modality": "text",
        "loraTargetModules": list(spec.lora_target_modules),
        "generationConfig": {"bos_token_id": PAD_ID, "eos_token_id": [EOS_ID, PAD_ID], "pad_token_id": PAD_ID,
                             **GENERATION_DEFAULTS},
        "maxContext": spec.max_positions,
    }


def _build(name: str, target: Path) -> dict[str, Any]:
    """Write the model into `target` (an empty directory) and return its facts."""
    if _vision(name):
        facts = _vision(name).build(name, target)
        (target / METADATA_FILE).write_text(json.dumps(facts, indent=2, sort_keys=True) + "\n")  # last: complete
        return facts
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM
    from transformers.utils import logging as hf_logging

    spec = _spec(name)
    facts = builtin_facts(name)
    hf_logging.disable_progress_bar()  # a build runs inside services whose stderr is a log, not a terminal
    tokenizer = _build_tokenizer(spec)
    if (tokenizer.convert_tokens_to_ids(PAD_TOKEN), tokenizer.convert_tokens_to_ids(IM_END)) != (PAD_ID, EOS_ID):
        raise RuntimeError(f"built-in model {name}: the tokenizer gave its special tokens other ids than declared")
    config = Qwen3Config(
        vocab_size=spec.vocab_size,
        hidden_size=spec.hidden_size,
        num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads,
        num_key_value_heads=spec.kv_heads,
        head_dim=spec.hidden_size // spec.heads,
        intermediate_size=spec.intermediate_size,
        max_position_embeddings=spec.max_positions,
        tie_word_embeddings=True,
        initializer_range=spec.init_std,
        bos_token_id=PAD_ID,
        eos_token_id=EOS_ID,
        pad_token_id=PAD_ID,
    )
    torch.manual_seed(spec.seed)
    model = Qwen3ForCausalLM(config).to(torch.float32).eval()
    with torch.no_grad():
        model.get_input_embeddings().weight.normal_(0.0, spec.embedding_std)
    built = sum(p.numel() for p in model.parameters())
    if built != facts["parameters"]:
        raise RuntimeError(f"built-in model {name} has {built} parameters; its facts say {facts['parameters']}")
    model.generation_config = GenerationConfig(**facts["generationConfig"])
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    # Written last: its presence marks a complete build.
    (target / METADATA_FILE).write_text(json.dumps(facts, indent=2, sort_keys=True) + "\n")
    return facts


def ensure_builtin(name: str, artifacts: ArtifactRoot) -> Path:
    """Build the built-in model `name` into the artifact store unless it is there; return a local
    directory holding it.

    Safe against several processes (or nodes sharing the volume) asking at once: one builds under a
    file lock in its scratch space and publishes the model with `put_dir`; the others wait and reuse it.
    """
    _vision(name) or _spec(name)
    key = model_key(name)
    done = join(key, METADATA_FILE)  # written last by a build: its presence marks a complete one
    if artifacts.exists(done):
        return artifacts.get_dir(key)
    scratch = artifacts.scratch("models")
    with open(scratch / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not artifacts.exists(done):
                staging = Path(tempfile.mkdtemp(dir=scratch, prefix=f".{name}-build-"))
                try:
                    _build(name, staging)
                    artifacts.put_dir(staging, key, move=True)
                finally:
                    shutil.rmtree(staging, ignore_errors=True)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return artifacts.get_dir(key)


def builtin_metadata(name: str, artifacts: ArtifactRoot) -> dict[str, Any]:
    """The facts a build of the built-in model wrote (building it first if needed)."""
    directory = ensure_builtin(name, artifacts)
    return json.loads((directory / METADATA_FILE).read_text())
