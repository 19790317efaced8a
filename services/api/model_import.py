"""`training base-models import PATH [--id ID]` (issue 29): register a real model in the catalog.

PATH is a path on the API's own machine, for admin tokens only, confined like a snapshot import by
path: absolute, under one of the config's `modelImportRoots`, reached through no symbolic link below
the root, plain files only. It is either

- a Hugging Face model directory (config.json, safetensors weights, tokenizer files): copied into
  the artifact store as it is; or
- a GGUF file: converted by a child process (`python -m shared.models.gguf_convert`) into a Hugging Face
  directory (weights dequantized to fp32 safetensors, its tokenizer and chat template kept), which
  is then stored. Its sha256 and quantization (file type, tensors per type) are recorded.

Then its facts are read from its own files (shared/models/facts.py) and the import is refused, with
the sentence, when the engines cannot train or serve it (an unknown architecture, a shape its config
does not give, no safetensors weights); nothing is left behind. The catalog entry
(`{id, artifact, imported: {...provenance}}`) is kept in Redis (Keys.imported_models), where every
service's Catalog finds it; its facts are read again from the stored files on every look.

Synchronous, with bounds: an import is a rare admin act whose result the admin waits for anyway, so
it runs inside the request rather than as a queued job, in one of the API's request threads (the
others keep answering; the API never loads torch, the conversion runs in its own process). What
it may cost is bounded: `limits.maxModelImportBytes` (8 GiB) of input, refused before anything is
read, and `limits.modelImportTimeoutS` (600 s) for the copy or conversion, after which the child is
killed and the import refused. SmolLM2-135M (a 98 MB Q4_1 GGUF) converts in about 40 s on 2 cores.
A model too large for that is converted offline and imported as a directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from services.api.auth import Principal
from services.api.context import Context
from services.api.plain_tree import copy_plain_tree, real_under_roots
from shared import reasons
from shared.errors import Conflict, Forbidden, TooLarge, Unprocessable, ValidationFailed
from shared.models.facts import CONFIG_FILE, ModelRefused, read_model_facts, refusal
from shared.process.child_env import child_env, with_python_path
from shared.store.artifacts import join
from shared.store.times import now_iso

REPO = Path(__file__).resolve().parents[2]
MODEL_ID_MAX = 96
MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?")
GGUF_SUFFIX = ".gguf"
RESERVED_ID = "import"  # /v1/base-models/import is the import route (services/api/views/base_models.py)
IMPORTED_MODELS_KEY = "models/imported"


def imported_model_key(model_id: str) -> str:
    """Where an imported model's directory lives in the artifact store (a `/` in its id is a folder)."""
    return join(IMPORTED_MODELS_KEY, model_id)


def import_model(context: Context, *, path: str, model_id: str | None, who: Principal) -> dict[str, Any]:
    """Import the model at `path` (a directory or a .gguf file) as `model_id` (default: the file's or
    directory's name); returns its catalog description."""
    if not who.admin:
        raise Forbidden(reasons.MODEL_IMPORT_ADMIN_ONLY, details={"field": "path"})
    source = _confined(context, path)
    is_gguf = source.is_file()
    model_id = model_id if model_id is not None else _default_id(source)
    if len(model_id) > MODEL_ID_MAX or MODEL_ID.fullmatch(model_id) is None or model_id == RESERVED_ID:
        raise ValidationFailed(reasons.model_import_id_invalid(model_id, MODEL_ID_MAX), details={"field": "id"})
    if model_id in context.catalog.ids():
        raise Conflict(reasons.model_import_id_taken(model_id), details={"field": "id", "model": model_id})
    limit = context.config.max_model_import_bytes
    if _size(source, path) > limit:
        raise TooLarge(reasons.model_import_too_large(path, limit), details={"field": "path", "maxBytes": limit})
    work = Path(tempfile.mkdtemp(prefix=".incoming-", dir=context.artifacts.scratch(IMPORTED_MODELS_KEY)))
    key = imported_model_key(model_id)
    try:
        started = time.monotonic()
        if is_gguf:
            provenance = _convert_gguf(context, source, work / "x")
        else:
            copy_plain_tree(source, work / "x", not_plain=lambda inside: reasons.model_import_path_not_plain(path, inside))
            provenance = {"format": "huggingface"}
        seconds = round(time.monotonic() - started, 1)
        facts = _facts(work / "x", model_id)
        provenance = {"source": str(source), **provenance, "seconds": seconds, "importedAt": now_iso(),
                      "importedBy": who.name}
        entry = {"id": model_id, "artifact": key, "imported": provenance}
        if not context.redis.hsetnx(context.keys.imported_models(), model_id, json.dumps(entry)):
            raise Conflict(reasons.model_import_id_taken(model_id), details={"field": "id", "model": model_id})
        try:
            context.artifacts.put_dir(work / "x", key, move=True)
        except BaseException:
            context.redis.hdel(context.keys.imported_models(), model_id)
            raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    described = context.catalog.describe(entry)
    return {**described, **{k: v for k, v in facts.items() if described.get(k) is None}}


def _default_id(source: Path) -> str:
    name = source.name[: -len(GGUF_SUFFIX)] if source.name.lower().endswith(GGUF_SUFFIX) else source.name
    return re.sub(r"[^A-Za-z0-9._-]", "-", name).lstrip("._-") or "model"


def _facts(directory: Path, model_id: str) -> dict[str, Any]:
    try:
        facts = read_model_facts(directory, model=model_id)
    except ModelRefused as exc:
        raise Unprocessable(str(exc), details={"field": "path"}) from None
    why = refusal(facts, model=model_id)
    if why is not None:
        raise Unprocessable(why, details={"field": "path", "architecture": facts["architecture"]})
    return facts


def _confined(context: Context, path: str) -> Path:
    """The absolute file or directory `path` names, once it is known to be inside an import root,
    reached through no symbolic link below it, and a .gguf file or a directory with config.json."""
    roots = context.config.model_import_roots
    if not roots:
        raise Forbidden(reasons.MODEL_IMPORT_OFF, details={"field": "path"})
    source = Path(path)
    if not source.is_absolute():
        raise ValidationFailed(reasons.model_import_path_not_absolute(path), details={"field": "path"})
    real = real_under_roots(path, roots, not_plain=lambda: reasons.model_import_path_not_plain(path, path))
    if real is None:
        raise ValidationFailed(reasons.model_import_path_outside_roots(path, [str(r) for r in roots]),
                               details={"field": "path"})
    if real.is_file() and real.name.lower().endswith(GGUF_SUFFIX):
        return real
    if real.is_dir() and (real / CONFIG_FILE).is_file() and not os.path.islink(real / CONFIG_FILE):
        return real
    raise ValidationFailed(reasons.model_import_not_a_model(path), details={"field": "path"})


def _size(source: Path, shown: str) -> int:
    if source.is_file():
        return source.stat().st_size
    total = 0
    for directory, dirs, files in os.walk(source, followlinks=False):
        for name in [*dirs, *files]:
            entry = Path(directory) / name
            if os.path.islink(entry):
                raise ValidationFailed(reasons.model_import_path_not_plain(shown, str(entry.relative_to(source))),
                                       details={"field": "path"})
        total += sum((Path(directory) / name).stat().st_size for name in files)
    return total


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1024 * 1024), b""):
            digest.update(block)
    return digest.hexdigest()


def _convert_gguf(context: Context, source: Path, target: Path) -> dict[str, Any]:
    """Convert in a child process under the import's time limit; its one JSON line says how it went."""
    timeout_s = context.config.model_import_timeout_s
    env = with_python_path(child_env(), str(REPO))
    try:
        done = subprocess.run([sys.executable, "-m", "shared.models.gguf_convert", str(source), str(target)], env=env,
                              cwd=str(REPO), stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise Unprocessable(reasons.gguf_conversion_timed_out(source.name, timeout_s),
                            details={"field": "path", "timeoutS": timeout_s}) from None
    lines = done.stdout.decode(errors="replace").strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else {}
    except ValueError:
        answer = {}
    if done.returncode != 0 or "quantization" not in answer:
        problem = answer.get("error") or reasons.gguf_conversion_failed(
            source.name, reasons.how_it_ended(done.returncode))
        raise Unprocessable(problem, details={"field": "path"})
    return {"format": "gguf", "file": source.name, "sha256": _sha256(source), "bytes": source.stat().st_size,
            "quantization": answer["quantization"], "dtype": "float32"}
