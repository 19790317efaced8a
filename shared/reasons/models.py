"""Base models read from their own files and imported (`training base-models import`): what is
missing from a model, what the engines cannot train or serve, and why an import was refused."""

from __future__ import annotations


# --- A model's own files (shared/models/facts.py)

def model_without_config(model: str) -> str:
    return f"model {model} has no config.json, so the trainer cannot tell its architecture or shape"


def model_file_not_json(file: str) -> str:
    return f"the model's {file} is not valid JSON"


def model_file_too_large(file: str, max_bytes: int) -> str:
    return f"the model's {file} is larger than the {max_bytes} bytes the trainer reads of it"


def model_weights_unreadable(file: str) -> str:
    return f"the model's weight file {file} is not a readable safetensors file"


def model_without_architecture(model: str) -> str:
    return f"model {model}'s config.json names no architecture (its `architectures` list is missing or empty)"


def model_architecture_unknown(model: str, architecture: str) -> str:
    return (f"model {model} is a {architecture}, an architecture this deployment's engines do not train or serve "
            "(they load models through transformers' AutoModelForCausalLM and its image-text-to-text class, "
            "which do not know it)")


def model_shape_missing(model: str, fields: list[str]) -> str:
    return (f"model {model}'s config.json does not give its {', '.join(fields)}, so the trainer cannot estimate "
            "the memory it needs")


def model_without_safetensors(model: str) -> str:
    return (f"model {model} holds no safetensors weights (model.safetensors or a model.safetensors.index.json "
            "and its shards); convert its weights to safetensors first")


def chat_rows_without_template(*, model: str, dataset: str) -> str:
    return (f"model {model} has no chat template (its tokenizer_config.json and chat_template.jinja name none), "
            f"so it cannot train on or be evaluated on the chat rows (messages) of dataset {dataset}; use "
            "prompt and completion rows, or import the model with a chat template")


# --- `training base-models import PATH` (services/api/model_import.py)

MODEL_IMPORT_ADMIN_ONLY = "importing a base model needs an admin token"

MODEL_IMPORT_OFF = ("this deployment imports base models from no directory (modelImportRoots is empty); "
                    "an operator lists the directories models may be imported from under modelImportRoots")

MODEL_IMPORT_BODY = ("a base-model import is a JSON object with `path` (a Hugging Face model directory or a "
                     ".gguf file on the API's own machine) and an optional `id`")


def model_import_path_not_absolute(path: str) -> str:
    return f"path {path} is not absolute; name the model directory or .gguf file by its absolute path"


def model_import_path_outside_roots(path: str, roots: list[str]) -> str:
    return (f"path {path} is not inside a model import root of this deployment ({', '.join(roots)}); "
            "its deployment config lists them under modelImportRoots")


def model_import_path_not_plain(path: str, entry: str) -> str:
    return (f"{entry} in {path} is a symbolic link or not a plain file; a model directory holds plain files "
            "and directories only")


def model_import_not_a_model(path: str) -> str:
    return (f"path {path} is neither a .gguf file nor a Hugging Face model directory (a directory holding "
            "config.json)")


def model_import_too_large(path: str, max_bytes: int) -> str:
    return (f"{path} holds more than the {max_bytes} bytes this deployment imports at once "
            "(limits.maxModelImportBytes)")


def model_import_id_invalid(model_id: str, max_chars: int) -> str:
    return (f"model id {model_id} is not a valid base-model id: one or two names joined by `/`, each of letters, "
            f"digits, `.`, `_` and `-` starting with a letter or digit, at most {max_chars} characters in all, "
            "and not `import`")


def model_import_id_taken(model_id: str) -> str:
    return f"model {model_id} is already in this deployment's catalog; import it under another --id"


def gguf_conversion_failed(file: str, problem: str) -> str:
    return f"GGUF file {file} could not be converted to a Hugging Face model: {problem}"


def gguf_conversion_timed_out(file: str, seconds: float) -> str:
    return (f"converting GGUF file {file} took longer than the {seconds:g} s this deployment allows an import "
            "(limits.modelImportTimeoutS); convert it offline and import the directory")
