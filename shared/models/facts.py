"""What a model is, read from its own files: the one reader the catalog, the resolver's memory
estimate and `training base-models import` share (issue 29).

A Hugging Face model directory says everything the trainer needs without loading a weight:

    config.json              architecture, modality (a `vision_config` makes it image-text) and the
                             shape: hidden size, layers, heads, kv heads, intermediate size, vocabulary,
                             max positions (an image-text model's from its `text_config`)
    *.safetensors headers    the parameter count, whether the output layer is tied to the embeddings
                             (no `lm_head.weight` of its own) and the LoRA target modules (the names of
                             the 2-D weights inside its layers, norms and embeddings left out)
    tokenizer_config.json    the chat template (or chat_template.jinja / chat_template.json)
    generation_config.json   the generation defaults

Only JSON and the safetensors headers (a length and a JSON document at the top of each file) are
read, so the API process, which never loads torch, reads them in milliseconds. Every JSON file is
read bounded. What cannot be trained or served is said in a sentence (`refusal`), never guessed.
"""

from __future__ import annotations

import json
import os
import struct
from functools import lru_cache
from pathlib import Path
from typing import Any

from shared import reasons

CONFIG_FILE = "config.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
GENERATION_CONFIG_FILE = "generation_config.json"
SAFETENSORS_INDEX = "model.safetensors.index.json"
MAX_JSON_BYTES = 32 * 1024 * 1024  # a tokenizer_config.json with every added token is a few MB
MAX_SAFETENSORS_HEADER_BYTES = 100 * 1024 * 1024  # safetensors' own limit
# Shape fields, as the catalog shows them, and the config.json keys they come from (first found).
SHAPE_KEYS = {
    "hiddenSize": ("hidden_size", "n_embd", "d_model"),
    "layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "heads": ("num_attention_heads", "n_head"),
    "kvHeads": ("num_key_value_heads",),
    "intermediateSize": ("intermediate_size", "n_inner", "ffn_dim"),
    "vocabSize": ("vocab_size",),
    "maxPositions": ("max_position_embeddings", "n_positions"),
}
# generation_config.json keys that are bookkeeping, not defaults
GENERATION_BOOKKEEPING = ("transformers_version", "_from_model_config", "output_attentions", "output_hidden_states",
                          "use_cache")
# LoRA targets in the order a Llama/Qwen block holds them; any other module name follows, sorted
USUAL_TARGET_ORDER = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class ModelRefused(ValueError):
    """A model the trainer cannot train or serve; its message is the sentence users read."""


def _json(path: Path, shown: str) -> Any:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_JSON_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_JSON_BYTES:
        raise ModelRefused(reasons.model_file_too_large(shown, MAX_JSON_BYTES))
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise ModelRefused(reasons.model_file_not_json(shown)) from None


AUTO_MAPPINGS = ("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES")


@lru_cache(maxsize=1)
def known_architectures() -> frozenset[str]:
    """The model classes the engines train and serve: what transformers' AutoModelForCausalLM builds
    (text) and its image-text-to-text auto class (image-text); every engine loads through them.

    Read from the two name tables of transformers' modeling_auto.py as literals, not by importing it:
    importing it loads torch, which the API process never does."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec("transformers")
    source = Path(list(spec.submodule_search_locations)[0], "models", "auto", "modeling_auto.py")
    names: set[str] = set()
    for node in ast.parse(source.read_text()).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in AUTO_MAPPINGS and isinstance(node.value, ast.Call) and node.value.args):
            for _, value in ast.literal_eval(node.value.args[0]):
                names.update([value] if isinstance(value, str) else value)
    return frozenset(names)


def safetensors_files(directory: Path) -> list[Path]:
    """The weight files of a model directory: those its index names, else every *.safetensors."""
    index = _json(directory / SAFETENSORS_INDEX, SAFETENSORS_INDEX)
    if isinstance(index, dict) and isinstance(index.get("weight_map"), dict):
        names = sorted({str(v) for v in index["weight_map"].values()})
        return [directory / n for n in names if "/" not in n and (directory / n).is_file()]
    return sorted(p for p in directory.glob("*.safetensors") if p.is_file())


def _safetensors_header(path: Path) -> dict[str, Any]:
    with open(path, "rb") as fh:
        head = fh.read(8)
        if len(head) < 8:
            raise ModelRefused(reasons.model_weights_unreadable(path.name))
        (length,) = struct.unpack("<Q", head)
        if length > MAX_SAFETENSORS_HEADER_BYTES:
            raise ModelRefused(reasons.model_weights_unreadable(path.name))
        try:
            header = json.loads(fh.read(length))
        except (ValueError, UnicodeDecodeError):
            raise ModelRefused(reasons.model_weights_unreadable(path.name)) from None
    if not isinstance(header, dict):
        raise ModelRefused(reasons.model_weights_unreadable(path.name))
    return header


def weight_facts(directory: Path) -> dict[str, Any] | None:
    """Parameter count, tied embeddings and LoRA target modules from the safetensors headers (None:
    the directory holds no safetensors weights)."""
    files = safetensors_files(directory)
    if not files:
        return None
    parameters, has_head, targets = 0, False, set()
    for path in files:
        for name, info in _safetensors_header(path).items():
            if name == "__metadata__" or not isinstance(info, dict):
                continue
            shape = [int(d) for d in info.get("shape") or []]
            count = 1
            for dim in shape:
                count *= dim
            parameters += count
            parts = name.split(".")
            has_head = has_head or parts[-2:] == ["lm_head", "weight"]
            if (len(shape) == 2 and parts[-1] == "weight" and "layers" in parts
                    and not any(word in parts[-2] for word in ("norm", "embed"))):
                targets.add(parts[-2])
    ordered = [m for m in USUAL_TARGET_ORDER if m in targets] + sorted(targets - set(USUAL_TARGET_ORDER))
    return {"parameters": parameters, "tiedEmbeddings": not has_head, "loraTargetModules": ordered}


def chat_template(directory: Path) -> str | None:
    """The model's chat template: tokenizer_config.json's `chat_template` (text, or the `default` of a
    list of named templates), else chat_template.jinja, else chat_template.json's; None when none."""
    config = _json(directory / TOKENIZER_CONFIG_FILE, TOKENIZER_CONFIG_FILE)
    template = config.get("chat_template") if isinstance(config, dict) else None
    if isinstance(template, list):
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default") or next(iter(named.values()), None)
    if not template and (directory / "chat_template.jinja").is_file():
        template = (directory / "chat_template.jinja").read_text(errors="replace")
    if not template:
        loose = _json(directory / "chat_template.json", "chat_template.json")
        template = loose.get("chat_template") if isinstance(loose, dict) else None
    return template if isinstance(template, str) and template.strip() else None


def generation_defaults(directory: Path) -> dict[str, Any]:
    config = _json(directory / GENERATION_CONFIG_FILE, GENERATION_CONFIG_FILE)
    if not isinstance(config, dict):
        return {}
    return {k: v for k, v in sorted(config.items()) if k not in GENERATION_BOOKKEEPING}


def _shape(config: dict[str, Any]) -> dict[str, Any]:
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    shape: dict[str, Any] = {}
    for field, keys in SHAPE_KEYS.items():
        value = next((text[k] for k in keys if isinstance(text.get(k), int) and not isinstance(text.get(k), bool)),
                     None)
        shape[field] = value
    if shape["kvHeads"] is None:
        shape["kvHeads"] = shape["heads"]  # no grouped keys and values: one per query head
    return shape


def read_model_facts(directory: Path | str, *, model: str) -> dict[str, Any]:
    """The facts of the model in `directory`, named `model` in sentences. Raises ModelRefused (its
    message the sentence) when config.json is missing or unreadable; what else it lacks, `refusal` says."""
    directory = Path(directory)
    stamp = _stamp(directory)
    return dict(_read_cached(str(directory), model, stamp))


def _stamp(directory: Path) -> tuple[int, ...]:
    """The modification times of the files facts are read from: a changed file is read afresh."""
    names = (CONFIG_FILE, TOKENIZER_CONFIG_FILE, GENERATION_CONFIG_FILE, SAFETENSORS_INDEX, "chat_template.jinja")
    stamps = []
    for name in names:
        try:
            stamps.append(os.stat(directory / name).st_mtime_ns)
        except OSError:
            stamps.append(0)
    return tuple(stamps)


@lru_cache(maxsize=64)
def _read_cached(directory: str, model: str, stamp: tuple[int, ...]) -> dict[str, Any]:
    folder = Path(directory)
    config = _json(folder / CONFIG_FILE, CONFIG_FILE)
    if config is None:
        raise ModelRefused(reasons.model_without_config(model))
    if not isinstance(config, dict):
        raise ModelRefused(reasons.model_file_not_json(CONFIG_FILE))
    architectures = config.get("architectures")
    named = isinstance(architectures, list) and architectures and isinstance(architectures[0], str)
    weights = weight_facts(folder) or {}
    shape = _shape(config)
    if weights:
        shape["tiedEmbeddings"] = weights["tiedEmbeddings"]
    else:
        tied = config.get("tie_word_embeddings")
        shape["tiedEmbeddings"] = tied if isinstance(tied, bool) else None
    return {
        "architecture": architectures[0] if named else None,
        "modelType": config.get("model_type") if isinstance(config.get("model_type"), str) else None,
        "modality": "image-text" if isinstance(config.get("vision_config"), dict) else "text",
        **shape,
        "parameters": weights.get("parameters"),
        "loraTargetModules": weights.get("loraTargetModules") or None,
        "chatTemplate": chat_template(folder),
        "generationConfig": generation_defaults(folder),
    }


def refusal(facts: dict[str, Any], *, model: str) -> str | None:
    """Why a model with these facts cannot be trained or served by this deployment, or None."""
    if facts["architecture"] is None:
        return reasons.model_without_architecture(model)
    if facts["architecture"] not in known_architectures():
        return reasons.model_architecture_unknown(model, facts["architecture"])
    missing = [field for field in ("hiddenSize", "layers", "heads", "vocabSize") if facts.get(field) is None]
    if missing:
        return reasons.model_shape_missing(model, missing)
    if not facts.get("parameters"):
        return reasons.model_without_safetensors(model)
    return None


def refuse_unusable(model: dict[str, Any], *, dataset: str | None = None, dataset_format: str | None = None,
                    field: str = "model") -> None:
    """Refuse (422) work over a catalog model (its description, shared/models/catalog.py) that its own files
    say cannot be done: an architecture or shape the engines do not know, or chat rows (`dataset_format`
    "chat") for a model without a chat template. A model whose files this machine could not read
    (`factsFrom` "catalog entry") is left to the worker that loads it."""
    from shared.data.datasets import CHAT
    from shared.errors import Unprocessable

    if model.get("factsFrom") == "files":
        why = refusal(model, model=model["id"])
        if why is not None:
            raise Unprocessable(why, details={"field": field, "architecture": model.get("architecture")})
    if (dataset_format == CHAT and model.get("factsFrom") in ("files", "spec") and not model.get("chatTemplate")
            and dataset is not None):
        raise Unprocessable(reasons.chat_rows_without_template(model=model["id"], dataset=dataset),
                            details={"field": "dataset", "model": model["id"]})
