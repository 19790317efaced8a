"""Serving processes and the models they load: the serving key, folded adapters
(shared/serving/adapter_fold.py), catalog models from the Hugging Face hub cache (SPEC 1, 2.1:
shared/models.py, shared/catalog.py)."""

from __future__ import annotations



# A request to a serving process's port without its secret (shared/serving/openai_app.py): only the
# trainer's proxy and the work that started the process hold it.
SERVING_KEY_REQUIRED = "this serving process answers only requests that carry its key; send them through the trainer"


def serving_route_refused(http_reason: str, method: str, path: str) -> str:
    """A serving process's answer to a route it does not have (`Not Found: GET /v1/nothing`)."""
    return f"{http_reason}: {method} {path}"


def serving_failed(error: str) -> str:
    """A serving process's 500 for an error nobody foresaw (`error`: phrases.error_text, no class name)."""
    return f"the server failed to answer: {error}"


def generation_failed(error: str) -> str:
    """The error a streamed answer ends with when generation fails after its status line was sent."""
    return f"generation failed: {error}"


def adapter_not_foldable(name: str, why: str) -> str:
    """A serving process in adapterMode folded (a rollout server) was handed an adapter it cannot
    fold into its weights exactly (shared/serving/adapter_fold.py)."""
    return f"adapter {name} cannot be folded into this server's weights: {why}; serve it with adapterMode unmerged"


def folded_server_serves_only(folded: str, asked: str) -> str:
    """A request for the base model to a serving process that has an adapter folded into its weights."""
    return f"this server has adapter {folded} folded into its weights, so it answers for {folded} only, not {asked}"


def folded_spec_adapters(count: int) -> str:
    """A load spec in adapterMode folded that names more than one adapter."""
    return f"load spec: adapterMode folded serves one adapter at a time, and {count} are named"


def hub_model_not_cached(*, model: str, revision: str, cache_dir: str) -> str:
    """A catalog entry with neither `builtin` nor `path` whose snapshot is not in the local hub cache:
    refused at submission (API) and, should a node's cache differ, when the worker loads it."""
    revision_flag = "" if revision == "main" else f" --revision {revision}"
    return (f"model {model} (revision {revision}) is not in the Hugging Face hub cache at {cache_dir}, "
            f"and the trainer never downloads models; download it into that cache first: "
            f"hf download {model}{revision_flag} --cache-dir {cache_dir}")


def hub_model_id_invalid(model: str) -> str:
    """A hub-cache catalog entry whose id cannot be a Hugging Face repo id (e.g. two slashes)."""
    return (f"catalog entry {model} names neither a built-in model nor a local path, and {model} is not a "
            "Hugging Face repo id (ORG/NAME) to find in the hub cache")
