"""A GGUF file as a Hugging Face model directory: `python -m shared.models.gguf_convert FILE OUT_DIR`.

Run as a child process by a base-model import (services/api/model_import.py), so the API process
never loads torch and the conversion runs under a time limit. transformers reads the GGUF file
(weights dequantized to fp32, its tokenizer and chat template kept), then writes safetensors, the
tokenizer files and generation_config.json into OUT_DIR. Transformers refuses `save_pretrained` on a
model it loaded from GGUF until the quantizer is detached (`remove_quantization_config`): the weights
are dense fp32 by then, so nothing is lost.

Prints one JSON line: `{"quantization": {...}}` (the file type and the count of tensors of each
quantization type, read from the GGUF header), or `{"error": SENTENCE}` with exit status 2.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from shared import reasons


def quantization(path: Path) -> dict[str, Any]:
    """The GGUF file's quantization as its header says: `fileType` (llama.cpp's name, e.g. MOSTLY_Q4_1)
    and `tensorTypes` (tensors per type, e.g. {"Q4_1": 211, "F32": 61})."""
    from gguf import GGUFReader, LlamaFileType

    reader = GGUFReader(str(path))
    field = reader.fields.get("general.file_type")
    file_type = None
    if field is not None:
        value = int(field.parts[field.data[0]][0])
        try:
            file_type = LlamaFileType(value).name
        except ValueError:
            file_type = str(value)
    types = Counter(t.tensor_type.name for t in reader.tensors)
    return {"fileType": file_type, "tensorTypes": dict(sorted(types.items()))}


def convert(source: Path, target: Path) -> dict[str, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    import torch

    hf_logging.disable_progress_bar()
    folder, name = str(source.parent), source.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32, local_files_only=True)
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer.remove_quantization_config(model)
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    return {"quantization": quantization(source)}


def main(argv: list[str]) -> int:
    source, target = Path(argv[0]), Path(argv[1])
    try:
        result = convert(source, target)
    except Exception as exc:  # noqa: BLE001 - any failure is reported as the one sentence the import shows
        problem = " ".join(reasons.error_text(exc).split())
        print(json.dumps({"error": reasons.gguf_conversion_failed(source.name, problem[:500])}))
        return 2
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
