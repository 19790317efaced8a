"""Artifacts sent as one .tar.gz (a snapshot's adapter, a run's TensorBoard event files): each file
read through the artifact store, under the name it has in the archive.

A downloaded adapter names its base model as a user can load it (issue 30): PEFT writes the
directory the worker loaded the base from into `adapter_config.json`'s `base_model_name_or_path`,
a path on the server; `portable_adapter_config` puts the catalog id there instead (for a hub-cache
entry, its hub repo id). Only the copy in the archive changes: the stored file, whose sha256 the
snapshot records, stays as the worker wrote it.
"""

from __future__ import annotations

import io
import json
import tarfile

from shared.store.artifacts import ArtifactStore

ADAPTER_CONFIG = "adapter_config.json"
BASE_MODEL_FIELD = "base_model_name_or_path"


def portable_adapter_config(raw: bytes, model_id: str | None) -> bytes | None:
    """The adapter config with `base_model_name_or_path` set to `model_id`; None (send the file as
    stored) when there is no model id, the file is not a JSON object, or it names no base model."""
    if not model_id:
        return None
    try:
        config = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(config, dict) or BASE_MODEL_FIELD not in config or config[BASE_MODEL_FIELD] == model_id:
        return None
    return (json.dumps({**config, BASE_MODEL_FIELD: model_id}, indent=2, sort_keys=True) + "\n").encode()


def tar_gz(artifacts: ArtifactStore, members: list[tuple[str, str]],
           replaced: dict[str, bytes] | None = None) -> io.BytesIO:
    """A gzipped tar of (key, name in the archive) pairs, read to its start; a name in `replaced`
    is written with those bytes in place of the stored file's."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for key, name in members:
            info = tarfile.TarInfo(name)
            info.mode = 0o644
            if replaced and name in replaced:
                info.size = len(replaced[name])
                tar.addfile(info, io.BytesIO(replaced[name]))
                continue
            with artifacts.open(key) as f:
                info.size = f.seek(0, io.SEEK_END)
                f.seek(0)
                tar.addfile(info, f)
    buffer.seek(0)
    return buffer
