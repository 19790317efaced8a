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


# --- A serving process's answers to requests (shared/serving/openai_app.py, generation.py). Where
# vLLM's server has words for the same refusal, they are vLLM's, so clients of either read the same.

SERVING_BODY_NOT_AN_OBJECT = "the request body must be a JSON object"
SERVING_LORA_FIELDS_MISSING = "Both 'lora_name' and 'lora_path' must be provided."
SERVING_LORA_NAME_MISSING = "'lora_name' must be provided."
SERVING_PATH_MISSING = "'path' must be provided."
SERVING_PROMPT_EMPTY = "the prompt is empty"
SERVING_SEVERAL_PROMPTS_STREAM = "a request with several prompts cannot stream on this server"
SERVING_MESSAGES_EMPTY = "messages must be a non-empty list"
SERVING_N_STREAM = "n must be 1 when streaming on this server"
SERVING_LOGPROBS = "logprobs and best_of are not supported on this server"
SERVING_STOP = "stop must be a string or a list of non-empty strings"
SERVING_SEED = "seed must be an integer"
SERVING_TOP_P_ZERO = "top_p must be above 0"
SERVING_WEIGHTS_UNDER_ADAPTERS = "the base weights can be updated only while no adapter is loaded"
SERVING_STOPPING = "the server is stopping"


def serving_adapter_unloadable(name: str, path: str, error: str) -> str:
    """PEFT refused an adapter directory (`error`: phrases.error_text)."""
    return f"cannot load the lora adapter '{name}' from {path}: {error}"


def serving_adapter_loaded(name: str, replaced: list[str]) -> str:
    """vLLM's answer to a loaded adapter; a folded server also says which adapter it took the place of."""
    instead = f" (folded in place of {', '.join(repr(n) for n in replaced)})" if replaced else ""
    return f"Success: LoRA adapter '{name}' added successfully{instead}."


def serving_adapter_unloaded(name: str) -> str:
    return f"Success: LoRA adapter '{name}' removed successfully."


def serving_adapter_twice(name: str) -> str:
    return f"The lora adapter '{name}' has already been loaded."


def serving_adapter_unknown(name: str) -> str:
    return f"The lora adapter '{name}' cannot be found."


def serving_model_unknown(name: str) -> str:
    return f"The model `{name}` does not exist."


def serving_too_many_completions(most: int, n: int, prompts: int) -> str:
    return f"n times the number of prompts must be at most {most} on this server, got {n} x {prompts}"


def serving_prompt_shape(most: int) -> str:
    return f"prompt must be a string, a list of token ids, or a list of 1 to {most} of either"


def serving_message_without_role(index: int) -> str:
    return f"messages[{index}] must be an object with a role"


def serving_message_text_only(index: int) -> str:
    return f"messages[{index}]: this model reads text parts only"


def serving_message_content(index: int) -> str:
    return f"messages[{index}].content must be a string"


def serving_parameter_not_number(name: str, whole: bool) -> str:
    return f"{name} must be a {'whole ' if whole else ''}number"


def serving_parameter_out_of_bounds(name: str, low: float, high: float | None, value: float) -> str:
    bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
    return f"{name} must be {bounds}, got {value}"


def serving_n_invalid(most: int) -> str:
    return f"n must be a whole number between 1 and {most}"


def serving_no_weights(path: str) -> str:
    return f"{path} holds no .safetensors files"


def serving_weights_mismatch(path: str, missing: list[str], unexpected: list[str]) -> str:
    return f"{path} does not hold this model's weights: missing {missing}, unexpected {unexpected}"


def serving_context_too_long(*, most: int, asked: int, prompt: int, completion: int) -> str:
    """vLLM's words for a prompt and completion longer than the model's context."""
    return (f"This model's maximum context length is {most} tokens. However, you requested "
            f"{asked} tokens ({prompt} in the messages, {completion} in the completion). "
            "Please reduce the length of the messages or completion.")


# --- The model-load spec (shared/load_spec.py): an endpoint's, an evaluation's, a rollout server's.

def load_spec_value_refused(field: str, value: str, allowed: list[str]) -> str:
    return f"load spec: {field} {value} is not one of {', '.join(allowed)}"


def load_spec_adapter_is_base(name: str) -> str:
    return f"load spec: adapter name {name} is also the base model's served name"


def load_spec_field_missing(field: str) -> str:
    return f"load spec: field {field} is missing"


def load_spec_unreadable(path: str, error: str) -> str:
    return f"load spec: cannot read {path}: {error}"


def load_spec_precision_unsupported(model: str, dtype: str, precisions: list[str]) -> str:
    return f"model {model} does not support precision {dtype}; it supports {', '.join(precisions)}"


def adapter_without_config(name: str, directory: str) -> str:
    return f"adapter {name}: {directory} holds no adapter_config.json"


# --- The catalog and its models (shared/catalog.py, shared/models.py, shared/tiny_models.py).

def model_not_in_catalog(model: str) -> str:
    return f"model {model} is not in this deployment's catalog"


def builtin_model_unknown(name: str, names: str) -> str:
    return f"there is no built-in model {name}; built-in models are {names}"


def model_dir_without_config(model: str, directory: str) -> str:
    return f"catalog entry {model} points at {directory}, which holds no config.json"


def precision_unknown(precision: str, precisions: list[str]) -> str:
    return f"precision {precision} is not one of {', '.join(precisions)}"


# --- Why an adapter cannot be folded (shared/serving/adapter_fold.py): adapter_not_foldable's `why`.

def fold_file_unreadable(path: str, error: str) -> str:
    return f"{path} cannot be read ({error})"


def fold_not_lora(peft_type: object) -> str:
    return f"it is a {peft_type} adapter, not LoRA"


def fold_trains_biases(bias: object) -> str:
    return f"it trains biases (bias {bias})"


def fold_setting_unknown(key: str, value_json: str) -> str:
    return f"its configuration sets {key} ({value_json[:60]})"


def fold_not_a_lora_matrix(key: str) -> str:
    return f"it holds {key}, which is not a LoRA matrix of a linear layer"


def fold_half_pair(module: str, has: list[str]) -> str:
    return f"{module} has only {', '.join(has)}"


def fold_module_missing(module: str) -> str:
    return f"this model has no module {module}"


def fold_not_linear(module: str, layer: str) -> str:
    """`layer`: the model's class for that module (a torch layer, e.g. Embedding)."""
    return f"{module} is a {layer}, not a linear layer"


def fold_weight_shared(module: str) -> str:
    return f"the weight of {module} is shared with another module"


def fold_rank_mismatch(module: str, rank: int, configured: int) -> str:
    return f"{module} has rank {rank}, its configuration says {configured}"


def fold_shape_mismatch(module: str, weight: tuple, delta: tuple) -> str:
    return f"{module} is {weight}, the adapter's delta {delta}"


FOLD_NO_MATRICES = "it holds no LoRA matrices"


def generation_defaults_text(defaults: dict) -> str:
    """The `Generation` row of `base-models get`: what a request that names no sampling settings gets
    (`generationDefaults`, shared/load_spec.generation_defaults)."""
    temperature = defaults.get("temperature") or 0
    sampling = ("greedy" if not temperature else
                f"temperature {temperature:g}, top_p {defaults.get('topP', 1.0):g}"
                + (f", top_k {defaults['topK']}" if defaults.get("topK") else ""))
    if defaults.get("repetitionPenalty", 1.0) != 1.0:
        sampling += f", repetition penalty {defaults['repetitionPenalty']:g}"
    source = "the model's max_new_tokens" if defaults.get("maxTokensFrom") == "model" else "the deployment's limit"
    context = (f"the rest of its {defaults['maxContext']}-token context" if defaults.get("maxContext")
               else "the rest of its context")
    return f"{sampling}; answers up to {defaults.get('maxTokens')} token(s) ({source}), within {context}"
