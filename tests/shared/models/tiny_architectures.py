"""Tiny random models of real architectures, filed in a Hugging Face hub cache (issue 15, item 4).

Besides the built-in Qwen3-style model (shared/models/tiny_models.py), the trainer must train, serve and
evaluate other families through the same code. This fixture writes, offline and deterministically,
a toy-sized random model of each of

    llama3    LlamaForCausalLM, as Meta-Llama-3-8B-Instruct: untied output layer, rope_theta 500000
    gemma3    Gemma3ForCausalLM over a Gemma3TextConfig (model_type gemma3_text), as gemma-3-1b-it:
              tied embeddings scaled by sqrt(hidden), q/k norms, sliding-window and full-attention
              layers, GELU-tanh MLP
    qwen2.5   Qwen2ForCausalLM, as Qwen2.5-0.5B-Instruct: biases on q/k/v, tied embeddings

each with the chat template of its family's instruct model, its special tokens, and the bos / eos /
pad tokens and generation config that family's files set. Each is saved with `save_pretrained`
(safetensors) and filed with `add_to_hub_cache` under a repo id of its own, so a catalog entry of
`source: hub-cache` (`catalog_entry`) loads it by the one loading path of shared/models/loading.py.

The chat templates are those of the families' tokenizer_config.json files:
- llama3: Meta-Llama-3-8B-Instruct's, verbatim (it has no tool calling; Llama 3.1's long template
  with tools and "Cutting Knowledge Date" is not used).
- gemma3: gemma-3-1b-it's, verbatim (system folded into the first user turn, assistant shown as
  "model", roles must alternate).
- qwen2.5: Qwen2.5-Instruct's, verbatim, tool calls included (they render only when a request
  passes `tools` or a message carries `tool_calls`; the default system message renders always).

How these differ from the real models, on purpose:
- sizes: hidden 64, 2 layers, a 512-token vocabulary, so a build takes a second or two;
- the tokenizer is a byte-level BPE trained here on a fixed corpus and the bundled sample data
  (shared.models.tiny_models' recipe), with the family's special tokens first (ids 0, 1, ...), not the
  family's own vocabulary (Llama 3's tiktoken BPE, Gemma's SentencePiece, Qwen's BPE), and only the
  special tokens the templates use (not Llama 3's 250 reserved ones, nor Qwen's tool and vision
  tokens); where the family adds a bos token when it tokenizes text (Llama 3, Gemma), a
  post-processor does. It is saved as a plain tokenizers backend (as Llama 3's own is): transformers
  then loads Qwen2.5's as a Qwen2Tokenizer, by its model type (Qwen's own pre-tokenizer over this
  vocabulary), and Gemma's as it was saved (a GemmaTokenizer would read a SentencePiece vocabulary);
- the Gemma model's sliding window is 16 tokens (gemma-3-1b: 512), so its prompts do cross it;
- weights are random, drawn wider than the families' 0.02 (as the built-in's are) so that a few
  LoRA steps visibly lower the loss; the commit hash in the cache is made up (tests/shared/models/hub_cache.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shared.models.tiny_models import FIXED_CORPUS, SAMPLE_DATASET
from tests.shared.models.hub_cache import add_to_hub_cache

VOCAB_SIZE = 512
HIDDEN = 64
LAYERS = 2
HEADS = 4
KV_HEADS = 2
INTERMEDIATE = 128
MAX_POSITIONS = 2048
INIT_STD = 0.1
EMBEDDING_STD = 0.15
LORA_TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

# --- The families' chat templates (see the docstring for where each comes from)

LLAMA3_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}"
    "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)

GEMMA3_TEMPLATE = """{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model\n'}}
{%- endif -%}
"""

QWEN25_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
QWEN25_TEMPLATE = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""


@dataclass(frozen=True)
class Architecture:
    """One family: its model class, tokens, template and generation config, as its files set them."""

    name: str
    repo_id: str  # where it is filed in the hub cache; the catalog entry's id
    model_class: str
    special_tokens: tuple[str, ...]  # given the first ids, in this order
    eos: str  # the tokenizer's eos token
    chat_template: str
    end_of_turn: str  # what the template writes after an assistant answer
    bos: str | None = None  # None: the family's tokenizer has no bos token (Qwen2.5)
    pad: str | None = None  # None: no pad token (Llama 3); shared.models.loading pads with eos
    unk: str | None = None
    adds_bos: bool = False  # tokenizing text adds the bos token (Llama 3's post-processor, Gemma's add_bos_token)
    generation_eos: tuple[str, ...] = ()  # generation_config.json's eos_token_id, as tokens
    # generation_config.json's other keys (the sampling defaults of the family's instruct model)
    generation: dict[str, Any] = field(default_factory=dict)
    tied: bool = True


ARCHITECTURES: dict[str, Architecture] = {
    "llama3": Architecture(
        name="llama3", repo_id="tiny-random/llama-3-instruct", model_class="LlamaForCausalLM",
        special_tokens=("<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                        "<|eot_id|>"),
        bos="<|begin_of_text|>", eos="<|eot_id|>", adds_bos=True, chat_template=LLAMA3_TEMPLATE,
        end_of_turn="<|eot_id|>", generation_eos=("<|end_of_text|>", "<|eot_id|>"),
        generation={"do_sample": True, "temperature": 0.6, "top_p": 0.9, "max_length": 4096}, tied=False,
    ),
    "gemma3": Architecture(
        name="gemma3", repo_id="tiny-random/gemma-3-it", model_class="Gemma3ForCausalLM",
        special_tokens=("<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>",
                        "<start_of_image>", "<end_of_image>"),
        bos="<bos>", eos="<eos>", pad="<pad>", unk="<unk>", adds_bos=True, chat_template=GEMMA3_TEMPLATE,
        end_of_turn="<end_of_turn>\n", generation_eos=("<eos>", "<end_of_turn>"),
        generation={"do_sample": True, "top_k": 64, "top_p": 0.95, "cache_implementation": "hybrid"},
    ),
    "qwen2.5": Architecture(
        name="qwen2.5", repo_id="tiny-random/qwen2.5-instruct", model_class="Qwen2ForCausalLM",
        special_tokens=("<|endoftext|>", "<|im_start|>", "<|im_end|>"),
        eos="<|im_end|>", pad="<|endoftext|>", chat_template=QWEN25_TEMPLATE, end_of_turn="<|im_end|>\n",
        generation_eos=("<|im_end|>", "<|endoftext|>"),
        generation={"do_sample": True, "temperature": 0.7, "top_p": 0.8, "top_k": 20, "repetition_penalty": 1.05},
    ),
}
NAMES = tuple(ARCHITECTURES)


def _training_text() -> list[str]:
    lines = [FIXED_CORPUS, "system\nuser\nassistant\nmodel\n" * 4]
    for raw in SAMPLE_DATASET.read_text().splitlines():
        lines.extend(message["content"] + "\n" for message in json.loads(raw)["messages"])
    return lines


def build_tokenizer(arch: Architecture):
    """A byte-level BPE with the family's special tokens, bos / eos / pad and chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, min_frequency=2, special_tokens=list(arch.special_tokens),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(_training_text(), trainer=trainer)
    if arch.adds_bos:
        bos_id = tok.token_to_id(arch.bos)
        tok.post_processor = processors.TemplateProcessing(
            single=f"{arch.bos}:0 $A:0", pair=f"{arch.bos}:0 $A:0 {arch.bos}:1 $B:1",
            special_tokens=[(arch.bos, bos_id)])
    named = {"bos_token": arch.bos, "eos_token": arch.eos, "pad_token": arch.pad, "unk_token": arch.unk}
    named = {k: v for k, v in named.items() if v is not None}
    others = [t for t in arch.special_tokens if t not in named.values()]
    wrapped = PreTrainedTokenizerFast(tokenizer_object=tok, additional_special_tokens=others,
                                      model_max_length=MAX_POSITIONS, **named)
    wrapped.chat_template = arch.chat_template
    return wrapped


def _config(arch: Architecture, tokenizer):
    from transformers import Gemma3TextConfig, LlamaConfig, Qwen2Config

    ids = {"bos_token_id": tokenizer.convert_tokens_to_ids(arch.bos) if arch.bos else None,
           "eos_token_id": tokenizer.convert_tokens_to_ids(arch.eos)}
    if arch.pad:
        ids["pad_token_id"] = tokenizer.convert_tokens_to_ids(arch.pad)
    shape = dict(vocab_size=VOCAB_SIZE, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                 num_key_value_heads=KV_HEADS, intermediate_size=INTERMEDIATE, max_position_embeddings=MAX_POSITIONS,
                 initializer_range=INIT_STD, tie_word_embeddings=arch.tied, **ids)
    if arch.name == "llama3":
        return LlamaConfig(**shape, rms_norm_eps=1e-5, rope_parameters={"rope_type": "default", "rope_theta": 500000.0})
    if arch.name == "gemma3":
        head_dim = HIDDEN // HEADS
        return Gemma3TextConfig(**shape, head_dim=head_dim, query_pre_attn_scalar=head_dim, sliding_window=16,
                                layer_types=["sliding_attention", "full_attention"])
    if arch.name == "qwen2.5":
        return Qwen2Config(**shape, rms_norm_eps=1e-6, rope_parameters={"rope_type": "default", "rope_theta": 1e6},
                           use_sliding_window=False)
    raise KeyError(arch.name)


def build(name: str, target: Path) -> Path:
    """Write the tiny `name` model (config, safetensors weights, tokenizer, generation config) into
    `target`; two builds write the same bytes."""
    import torch
    import transformers
    from transformers import GenerationConfig
    from transformers.utils import logging as hf_logging

    arch = ARCHITECTURES[name]
    hf_logging.disable_progress_bar()
    tokenizer = build_tokenizer(arch)
    config = _config(arch, tokenizer)
    torch.manual_seed(sum(map(ord, name)))
    model = getattr(transformers, arch.model_class)(config).to(torch.float32).eval()
    with torch.no_grad():
        model.get_input_embeddings().weight.normal_(0.0, EMBEDDING_STD)
    generation = {k: v for k, v in (("bos_token_id", config.bos_token_id), ("pad_token_id", config.pad_token_id))
                  if v is not None}
    model.generation_config = GenerationConfig(
        **generation, eos_token_id=[tokenizer.convert_tokens_to_ids(t) for t in arch.generation_eos],
        **arch.generation)
    target.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target


def catalog_entry(name: str, parameters: int | None = None) -> dict[str, Any]:
    """The deployment config's catalog entry of a hub-cache model: its repo id and declared facts."""
    return {"id": ARCHITECTURES[name].repo_id, "parameters": parameters, "precisions": ["fp32", "bf16"],
            "gpuCounts": [1], "loraTargetModules": list(LORA_TARGET_MODULES)}


@dataclass
class HubModels:
    """The tiny models, each built once on first use into `root`/built and filed in the hub cache
    `root`/hub (point HF_HUB_CACHE there to load them by catalog entry)."""

    root: Path
    snapshots: dict[str, Path] = field(default_factory=dict)

    @property
    def cache_dir(self) -> Path:
        return self.root / "hub"

    def snapshot(self, name: str) -> Path:
        """The model's snapshot directory in the hub cache: what shared.models.loading.model_dir_for finds."""
        if name not in self.snapshots:
            built = build(name, self.root / "built" / name)
            self.snapshots[name] = add_to_hub_cache(self.cache_dir, ARCHITECTURES[name].repo_id, built)
        return self.snapshots[name]

    def entry(self, name: str) -> dict[str, Any]:
        """Its catalog entry, with the parameter count of its weights file (a tied output layer is
        stored once, as it counts once)."""
        from math import prod

        from safetensors import safe_open

        with safe_open(str(self.snapshot(name) / "model.safetensors"), "pt") as weights:
            parameters = sum(prod(weights.get_slice(k).get_shape()) for k in weights.keys())
        return catalog_entry(name, parameters)
