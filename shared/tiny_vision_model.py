"""The built-in tiny image-text model (SPEC 2.1 `modality: image-text`; issue 17), built offline and
deterministically like the text models of shared/tiny_models.py, which registers it.

It is a Gemma 3 image-text model (`Gemma3ForConditionalGeneration`: a SigLIP vision tower, the
multi-modal projector that pools its patches into `mm_tokens_per_image` soft tokens, and a Gemma 3
text decoder with q/k norms and a sliding-window and a full-attention layer) at toy size, with:

- its own byte-level BPE tokenizer, trained on the bundled image-text sample and a fixed corpus,
  holding Gemma 3's special tokens (`<start_of_image>`, `<image_soft_token>`, `<end_of_image>`,
  `<start_of_turn>`, `<end_of_turn>`);
- a Gemma-style chat template (`<start_of_turn>user ... <end_of_turn>`, the assistant shown as
  `model`) whose image parts render as `<start_of_image>`, as gemma-3-it's template does;
- its processor (`Gemma3Processor` over the Pillow `Gemma3ImageProcessorPil`, 32x32 images, each
  image expanded to `IMAGE_TOKENS` soft tokens), made here from its settings: nothing is
  downloaded.

It is written in the Hugging Face layout (config.json, model.safetensors, tokenizer and processor
files, generation_config.json), so a real image-text model (Gemma 3, Gemma 4) in a local directory
or the hub cache loads through the same code (shared/models.py `load_causal_lm`, `load_processor`).
Its facts follow from its spec alone (`builtin_facts`), so the API describes it without torch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SAMPLE_DATASET = Path(__file__).with_name("data") / "sample_image_text.jsonl"
MODALITY = "image-text"

PAD, EOS, BOS = "<pad>", "<eos>", "<bos>"
START_OF_TURN, END_OF_TURN = "<start_of_turn>", "<end_of_turn>"
BOI, EOI, IMAGE_SOFT = "<start_of_image>", "<end_of_image>", "<image_soft_token>"
# The tokenizer trainer gives the special tokens the first ids, in this order.
SPECIAL_TOKENS = [PAD, EOS, BOS, START_OF_TURN, END_OF_TURN, BOI, EOI, IMAGE_SOFT]
PAD_ID, EOS_ID, BOS_ID = 0, 1, 2
END_OF_TURN_ID = SPECIAL_TOKENS.index(END_OF_TURN)

# gemma-3-it's format at its simplest: a bos, each message as <start_of_turn>role\n...<end_of_turn>\n
# with the assistant as "model", images as <start_of_image> (the processor expands each one).
CHAT_TEMPLATE = (
    "{{- bos_token }}"
    "{%- for message in messages %}"
    "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
    "{{- '<start_of_turn>' + role + '\\n' }}"
    "{%- if message['content'] is string %}{{- message['content'] }}"
    "{%- else %}{%- for part in message['content'] %}"
    "{%- if part['type'] == 'text' %}{{- part['text'] }}"
    "{%- elif part['type'] in ('image', 'image_url') %}{{- '<start_of_image>' }}{%- endif %}"
    "{%- endfor %}{%- endif %}"
    "{{- '<end_of_turn>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<start_of_turn>model\\n' }}{%- endif %}"
)

FIXED_CORPUS = (
    "You are a helpful assistant. Look at the image and answer briefly.\n"
    "What colour is the shape? What is in the picture? Describe the image.\n"
    "red green blue yellow white black square disc circle triangle\n"
    "0123456789 " + "".join(chr(c) for c in range(32, 127)) + "\n"
)


@dataclass(frozen=True)
class TinyVisionSpec:
    """The shape of one built-in image-text model; toy sizes, so a build takes seconds on a CPU."""

    architecture: str
    vocab_size: int
    hidden_size: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate_size: int
    sliding_window: int
    max_positions: int
    vision_hidden_size: int
    vision_intermediate_size: int
    vision_layers: int
    vision_heads: int
    image_size: int
    patch_size: int
    image_tokens: int  # soft tokens per image after the projector's pooling (a square number)
    seed: int
    init_std: float  # wider than a real model's, for the reason shared/tiny_models.py gives
    lora_target_modules: tuple[str, ...]


VISION_MODELS: dict[str, TinyVisionSpec] = {
    "tiny-gemma3-vision": TinyVisionSpec(
        architecture="Gemma3ForConditionalGeneration",
        vocab_size=512,
        hidden_size=64,
        layers=2,
        heads=4,
        kv_heads=2,
        head_dim=16,
        intermediate_size=128,
        sliding_window=64,
        max_positions=2048,
        vision_hidden_size=32,
        vision_intermediate_size=64,
        vision_layers=1,
        vision_heads=2,
        image_size=32,
        patch_size=8,
        image_tokens=4,
        seed=4321,
        init_std=0.1,
        lora_target_modules=("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
    ),
}

GENERATION_DEFAULTS = {"do_sample": False, "max_new_tokens": 64}


def parameter_count(spec: TinyVisionSpec) -> int:
    """The parameters of the Gemma 3 image-text model `spec` describes.

    Text decoder: tied embeddings; per layer the attention projections (no biases), q/k norms over a
    head, the gated MLP and four RMS norms; a final norm. Vision tower (SigLIP, no head): the patch
    convolution with its bias, a position embedding per patch; per layer two layer norms (weight and
    bias), q/k/v/out projections and a two-layer MLP, all with biases; a post layer norm. Projector:
    the projection matrix and a soft-embedding RMS norm."""
    h, kv = spec.hidden_size, spec.kv_heads * spec.head_dim
    attention = 2 * h * spec.heads * spec.head_dim + 2 * h * kv
    layer = attention + 2 * spec.head_dim + 3 * h * spec.intermediate_size + 4 * h
    text = spec.vocab_size * h + spec.layers * layer + h
    vh, vi = spec.vision_hidden_size, spec.vision_intermediate_size
    patches = (spec.image_size // spec.patch_size) ** 2
    vision_layer = 2 * 2 * vh + 4 * (vh * vh + vh) + (vh * vi + vi) + (vi * vh + vh)
    vision = 3 * spec.patch_size**2 * vh + vh + patches * vh + spec.vision_layers * vision_layer + 2 * vh
    projector = vh * h + vh
    return text + vision + projector


def builtin_facts(name: str) -> dict[str, Any]:
    """The catalog facts of a built-in image-text model, from its spec alone (no build, no torch)."""
    from shared.tiny_models import spec_shape

    spec = VISION_MODELS[name]
    return {
        "builtin": name,
        "architecture": spec.architecture,
        **spec_shape(spec),
        "chatTemplate": CHAT_TEMPLATE,
        "parameters": parameter_count(spec),
        "precisions": ["fp32", "bf16"],
        "gpuCounts": [1, 2],
        "modality": MODALITY,
        "loraTargetModules": list(spec.lora_target_modules),
        "generationConfig": {"bos_token_id": BOS_ID, "eos_token_id": [END_OF_TURN_ID, EOS_ID], "pad_token_id": PAD_ID,
                             **GENERATION_DEFAULTS},
        "maxContext": spec.max_positions,
    }


def _training_text() -> list[str]:
    from shared.images import content_text

    lines = [FIXED_CORPUS]
    for raw in SAMPLE_DATASET.read_text().splitlines():
        for message in json.loads(raw)["messages"]:
            lines.append(f"{START_OF_TURN}{message['role']}\n{content_text(message['content'])}{END_OF_TURN}\n")
    return lines


def _build_tokenizer(spec: TinyVisionSpec):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=spec.vocab_size, min_frequency=2, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(_training_text(), trainer=trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=END_OF_TURN,
        pad_token=PAD,
        # Gemma3Processor reads these by name (tokenizer.boi_token, .image_token, .eoi_token).
        extra_special_tokens={"boi_token": BOI, "eoi_token": EOI, "image_token": IMAGE_SOFT,
                              "start_of_turn_token": START_OF_TURN},
        model_max_length=spec.max_positions,
    )
    wrapped.chat_template = CHAT_TEMPLATE
    return wrapped


def _config(spec: TinyVisionSpec, tokenizer):
    from transformers import Gemma3Config

    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in SPECIAL_TOKENS}
    return Gemma3Config(
        text_config=dict(
            vocab_size=spec.vocab_size, hidden_size=spec.hidden_size, intermediate_size=spec.intermediate_size,
            num_hidden_layers=spec.layers, num_attention_heads=spec.heads, num_key_value_heads=spec.kv_heads,
            head_dim=spec.head_dim, query_pre_attn_scalar=spec.head_dim, sliding_window=spec.sliding_window,
            layer_types=["sliding_attention", "full_attention"][: spec.layers],
            max_position_embeddings=spec.max_positions, initializer_range=spec.init_std,
            bos_token_id=BOS_ID, eos_token_id=END_OF_TURN_ID, pad_token_id=PAD_ID,
        ),
        vision_config=dict(
            hidden_size=spec.vision_hidden_size, intermediate_size=spec.vision_intermediate_size,
            num_hidden_layers=spec.vision_layers, num_attention_heads=spec.vision_heads,
            image_size=spec.image_size, patch_size=spec.patch_size, vision_use_head=False,
        ),
        mm_tokens_per_image=spec.image_tokens,
        boi_token_index=ids[BOI],
        eoi_token_index=ids[EOI],
        image_token_index=ids[IMAGE_SOFT],
        initializer_range=spec.init_std,
        tie_word_embeddings=True,
    )


def build(name: str, target: Path) -> dict[str, Any]:
    """Write the model, its tokenizer and processor into `target` (an empty directory); return its facts."""
    import torch
    from transformers import Gemma3ForConditionalGeneration, Gemma3Processor, GenerationConfig
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil
    from transformers.utils import logging as hf_logging

    spec = VISION_MODELS[name]
    facts = builtin_facts(name)
    hf_logging.disable_progress_bar()
    tokenizer = _build_tokenizer(spec)
    declared = {PAD: PAD_ID, EOS: EOS_ID, BOS: BOS_ID, END_OF_TURN: END_OF_TURN_ID}
    if any(tokenizer.convert_tokens_to_ids(token) != i for token, i in declared.items()):
        raise RuntimeError(f"built-in model {name}: the tokenizer gave its special tokens other ids than declared")
    image_processor = Gemma3ImageProcessorPil(size={"height": spec.image_size, "width": spec.image_size})
    processor = Gemma3Processor(image_processor=image_processor, tokenizer=tokenizer, chat_template=CHAT_TEMPLATE,
                                image_seq_length=spec.image_tokens)
    torch.manual_seed(spec.seed)
    model = Gemma3ForConditionalGeneration(_config(spec, tokenizer)).to(torch.float32).eval()
    # transformers initialises Gemma 3's projector to zeros (a real model's weights are loaded over
    # it); from random weights that would make every image the same zero soft tokens, which no
    # training could tell apart. Drawn like the other weights, under the same seed.
    with torch.no_grad():
        model.model.multi_modal_projector.mm_input_projection_weight.normal_(std=spec.init_std)
    built = sum(p.numel() for p in model.parameters())
    if built != facts["parameters"]:
        raise RuntimeError(f"built-in model {name} has {built} parameters; its facts say {facts['parameters']}")
    model.generation_config = GenerationConfig(**facts["generationConfig"])
    model.save_pretrained(target)
    processor.save_pretrained(target)
    return facts
