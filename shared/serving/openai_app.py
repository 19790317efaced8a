"""The built-in server's HTTP surface: the parts of vLLM's OpenAI-compatible server the trainer uses.

`GET /health`, `GET /v1/models`, `POST /v1/completions` (one prompt, or a list of prompts sampled
as one batch), `POST /v1/chat/completions` (both with `stream`; `n` > 1, several prompts and
`return_token_ids` answer in one body), `POST /v1/load_lora_adapter`,
`POST /v1/unload_lora_adapter` (in the load spec's adapterMode folded, one adapter at a time
folded into the weights: loading another replaces it, shared/serving/adapter_fold.py), and
`POST /v1/update_weights` (built-in only: every base weight
from a directory of safetensors, the baseline bench/grpo_handoff.py measures). Bodies and errors answer
like vLLM's (`{"error": {"message", "type", "param", "code"}}`), so the endpoint manager, the API's
proxy and the official `openai` client cannot tell the two backends apart. Views only parse and
serialise; generation lives in `generation.py`.
"""

from __future__ import annotations

import hmac
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException

from shared import json_values, reasons
from shared.errors import TrainerError, ValidationFailed
from shared.images import content_faults
from shared.reasons import SERVING_KEY_REQUIRED
from shared.serving.generation import MAX_N, Generator, Outcome, SamplingParams

ERROR_TYPES = {400: "BadRequestError", 401: "AuthenticationError", 404: "NotFoundError", 405: "MethodNotAllowed", 500: "InternalServerError"}
OWNED_BY = "the-trainer"


def error_body(status: int, message: str, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": ERROR_TYPES.get(status, "BadRequestError"), "param": param, "code": status}}


def _body() -> dict[str, Any]:
    """The body as a JSON object; a 400, never a 500, for JSON nested too deep or holding a lone
    surrogate, which no tokenizer reads (shared/json_values.py)."""
    try:
        body = json_values.loads(request.get_data(cache=True)) if request.is_json else None
    except json_values.JsonRefused as exc:
        raise ValidationFailed(reasons.request_body_refused(exc.field, exc.problem),
                               details={"param": exc.field}) from None
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise ValidationFailed(reasons.SERVING_BODY_NOT_AN_OBJECT)
    return body


def _sse(payload: dict[str, Any] | str) -> str:
    return f"data: {payload if isinstance(payload, str) else json.dumps(payload)}\n\n"


def _usage(outcome: Outcome) -> dict[str, int]:
    return {
        "prompt_tokens": outcome.prompt_tokens,
        "completion_tokens": outcome.completion_tokens,
        "total_tokens": outcome.prompt_tokens + outcome.completion_tokens,
    }


def create_app(generator: Generator, log, *, api_key: str | None = None) -> Flask:
    """The built-in serving process's routes. With `api_key`, every route but /health (the managers'
    probe) answers 401 unless the request carries it as its bearer token: only the trainer's proxy,
    and the run or evaluation that started the process, hold it."""
    app = Flask(__name__)
    if api_key:
        _require_key(app, api_key)
    _answer_errors(app, log)
    _model_routes(app, generator, log)
    _generation_routes(app, generator, log)
    return app


def _require_key(app: Flask, api_key: str) -> None:
    """Every route but /health answers 401 without `api_key` as the request's bearer token."""
    expected = f"Bearer {api_key}".encode()

    @app.before_request
    def _authenticate():
        if request.path == "/health":
            return None
        given = (request.headers.get("Authorization") or "").encode("latin-1", "replace")
        if not hmac.compare_digest(given, expected):
            return jsonify(error_body(401, SERVING_KEY_REQUIRED)), 401
        return None


def _answer_errors(app: Flask, log) -> None:
    """Every error as vLLM words it: the trainer's own (their status), HTTP's, and anything else (500)."""

    @app.errorhandler(TrainerError)
    def trainer_error(exc: TrainerError):
        param = exc.details.get("param") if isinstance(exc.details, dict) else None
        return jsonify(error_body(exc.status, exc.message, param)), exc.status

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        status = exc.code or 400
        return jsonify(error_body(status, reasons.serving_route_refused(exc.name, request.method, request.path))), status

    @app.errorhandler(Exception)
    def unexpected(exc: Exception):
        log.exception("request failed", path=request.path)
        return jsonify(error_body(500, reasons.serving_failed(reasons.error_text(exc)))), 500


def _model_routes(app: Flask, generator: Generator, log) -> None:
    """Health, the served models, and what changes them: adapters loaded and unloaded, base weights."""
    spec = generator.spec

    @app.get("/health")
    def health():
        return Response(status=200)

    @app.get("/v1/models")
    def models():
        created = int(time.time())
        card = dict(object="model", created=created, owned_by=OWNED_BY, max_model_len=generator.max_context)
        data = [{"id": spec.served_model_name, "root": spec.model_dir, "parent": None, **card}]
        data += [{"id": name, "root": path, "parent": spec.served_model_name, **card} for name, path in generator.adapters.items()]
        return jsonify({"object": "list", "data": data})

    @app.post("/v1/load_lora_adapter")
    def load_lora_adapter():
        body = _body()
        name, path = body.get("lora_name"), body.get("lora_path")
        if not isinstance(name, str) or not name or not isinstance(path, str) or not path:
            raise ValidationFailed(reasons.SERVING_LORA_FIELDS_MISSING, details={"param": "lora_name"})
        try:
            replaced = generator.load_adapter(name, path)
        except TrainerError:
            raise
        except Exception as exc:  # peft refusing the directory: the caller's input, not our failure
            raise ValidationFailed(reasons.serving_adapter_unloadable(name, path, reasons.error_text(exc))) from None
        log.info("adapter loaded", adapter=name, path=path, replaced=replaced, mode=spec.adapter_mode)
        return Response(reasons.serving_adapter_loaded(name, replaced), status=200, mimetype="text/plain")

    @app.post("/v1/unload_lora_adapter")
    def unload_lora_adapter():
        name = _body().get("lora_name")
        if not isinstance(name, str) or not name:
            raise ValidationFailed(reasons.SERVING_LORA_NAME_MISSING, details={"param": "lora_name"})
        generator.unload_adapter(name)
        log.info("adapter unloaded", adapter=name)
        return Response(reasons.serving_adapter_unloaded(name), status=200, mimetype="text/plain")

    @app.post("/v1/update_weights")
    def update_weights():  # every base weight from a directory: bench/grpo_handoff.py's baseline
        path = _body().get("path")
        if not isinstance(path, str) or not path:
            raise ValidationFailed(reasons.SERVING_PATH_MISSING, details={"param": "path"})
        tensors = generator.update_weights(path)
        log.info("weights updated", path=path, tensors=tensors)
        return jsonify({"tensors": tensors})


def _generation_routes(app: Flask, generator: Generator, log) -> None:
    """`/v1/completions` and `/v1/chat/completions`: one answer, a stream, or many in one body."""

    def prepared(body: dict[str, Any], *prompts: list[int]):
        if not all(prompts):
            raise ValidationFailed(reasons.SERVING_PROMPT_EMPTY, details={"param": "prompt"})
        params = generator.fit_to_context(SamplingParams.from_request(body, generator.defaults), list(prompts))
        if len(prompts) * params.n > MAX_N:
            raise ValidationFailed(reasons.serving_too_many_completions(MAX_N, params.n, len(prompts)),
                                   details={"param": "prompt"})
        if len(prompts) > 1 and body.get("stream"):
            raise ValidationFailed(reasons.SERVING_SEVERAL_PROMPTS_STREAM, details={"param": "stream"})
        for prompt_ids in prompts:
            generator.check_length(prompt_ids, params)
        return params

    def finished(kind: str, model: str, outcome: Outcome, started: float) -> None:
        log.info("request done", kind=kind, requested_model=model, prompt_tokens=outcome.prompt_tokens,
                 completion_tokens=outcome.completion_tokens, finish_reason=outcome.finish_reason,
                 duration_ms=round((time.monotonic() - started) * 1000, 1))

    @app.post("/v1/completions")
    def completions():
        started, body = time.monotonic(), _body()
        model = generator.check_model(body.get("model"))
        prompts = _prompts(generator, body.get("prompt"))
        params = prepared(body, *prompts)
        head = {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": int(time.time()), "model": model}
        if len(prompts) > 1 or params.n > 1 or body.get("return_token_ids"):
            # groups of completions in one batch, e.g. a GRPO step's rollouts
            return jsonify(_many(generator, head, body, prompts, params, model, chat=False))
        [prompt_ids] = prompts
        outcome = Outcome(prompt_tokens=len(prompt_ids))
        pieces = generator.generate(prompt_ids, params, model, outcome)
        if body.get("stream"):
            def chunk(text: str, finish: str | None) -> dict[str, Any]:
                return {**head, "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": finish}]}
            return _stream(pieces, outcome, head, body, chunk, lambda: finished("completion", model, outcome, started))
        text = "".join(pieces)
        finished("completion", model, outcome, started)
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": outcome.finish_reason, "stop_reason": None}
        return jsonify({**head, "choices": [choice], "usage": _usage(outcome)})

    @app.post("/v1/chat/completions")
    def chat_completions():
        started, body = time.monotonic(), _body()
        model = generator.check_model(body.get("model"))
        messages = _messages(body.get("messages"), images=generator.processor is not None)
        prompt_ids, extras = generator.encode_chat_inputs(messages)
        params, outcome = prepared(body, prompt_ids), Outcome(prompt_tokens=len(prompt_ids))
        head = {"id": f"chatcmpl-{uuid.uuid4().hex}", "created": int(time.time()), "model": model}
        if params.n > 1 or body.get("return_token_ids"):
            return jsonify(_many(generator, head, body, [prompt_ids], params, model, chat=True, extras=extras))
        pieces = generator.generate(prompt_ids, params, model, outcome, extras)
        if body.get("stream"):
            def chunk(text: str | None, finish: str | None) -> dict[str, Any]:
                delta = {"role": "assistant", "content": ""} if text is None else ({"content": text} if text else {})
                choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                return {**head, "object": "chat.completion.chunk", "choices": [choice]}
            return _stream(pieces, outcome, head, body, chunk, lambda: finished("chat", model, outcome, started),
                           opening=chunk(None, None))
        text = "".join(pieces)
        finished("chat", model, outcome, started)
        choice = {"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": None,
                  "finish_reason": outcome.finish_reason, "stop_reason": None}
        return jsonify({**head, "object": "chat.completion", "choices": [choice], "usage": _usage(outcome)})


def _prompts(generator: Generator, prompt: Any) -> list[list[int]]:
    """The token ids of each prompt of a completions request, in the OpenAI forms vLLM accepts: a
    string, token ids, or a list of either (one prompt each)."""
    def is_ids(value: Any) -> bool:
        return isinstance(value, list) and all(isinstance(t, int) and not isinstance(t, bool) for t in value)

    if isinstance(prompt, str):
        return [generator.encode_prompt(prompt)]
    if is_ids(prompt) and prompt:
        return [list(prompt)]
    if isinstance(prompt, list) and prompt and len(prompt) <= MAX_N:
        if all(isinstance(p, str) for p in prompt):
            return [generator.encode_prompt(p) for p in prompt]
        if all(is_ids(p) for p in prompt):
            return [list(p) for p in prompt]
    raise ValidationFailed(reasons.serving_prompt_shape(MAX_N), details={"param": "prompt"})


def _many(generator: Generator, head: dict, body: dict, prompts: list[list[int]], params: SamplingParams, model: str,
          *, chat: bool, extras: dict[str, Any] | None = None) -> dict[str, Any]:
    """`n` completions of each prompt in one response, prompt by prompt (choice `i * n + j` is the
    j-th of prompt i, as vLLM's server orders them); with `return_token_ids` each choice carries
    `token_ids` and `prompt_token_ids`, as vLLM's server answers (a chat's images are read by every
    completion)."""
    groups = generator.generate_many(prompts, params, model, extras)
    with_ids = bool(body.get("return_token_ids"))
    choices = []
    for prompt_ids, sampled in zip(prompts, groups):
        for one in sampled:
            choice: dict[str, Any] = {"index": len(choices), "logprobs": None, "finish_reason": one.finish_reason,
                                      "stop_reason": None}
            if chat:
                choice["message"] = {"role": "assistant", "content": one.text}
            else:
                choice["text"] = one.text
            if with_ids:
                choice.update(prompt_token_ids=list(prompt_ids), token_ids=one.token_ids)
            choices.append(choice)
    prompt_tokens = sum(map(len, prompts))
    completion_tokens = sum(len(one.token_ids) for sampled in groups for one in sampled)
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
             "total_tokens": prompt_tokens + completion_tokens}
    return {**head, "object": "chat.completion" if chat else "text_completion", "choices": choices, "usage": usage}


def _messages(raw: Any, *, images: bool = False) -> list[dict[str, Any]]:
    """Chat messages with string content (a list of text parts is joined, as vLLM does for text
    models); for a model that reads `images`, content lists of text and image_url parts are kept
    as they are, every image decoded and bounded (shared/images.py), a fault naming its part."""
    if not isinstance(raw, list) or not raw:
        raise ValidationFailed(reasons.SERVING_MESSAGES_EMPTY, details={"param": "messages"})
    messages = []
    for i, message in enumerate(raw):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise ValidationFailed(reasons.serving_message_without_role(i), details={"param": "messages"})
        content = message.get("content") or ""
        if images and isinstance(content, list):
            faults = content_faults(content, f"messages[{i}].content")
            if faults:
                where, problem = faults[0]
                raise ValidationFailed(reasons.request_part_refused(where, problem), details={"param": "messages"})
            messages.append({"role": message["role"], "content": content})
            continue
        if isinstance(content, list):
            if not all(isinstance(p, dict) and p.get("type") == "text" for p in content):
                raise ValidationFailed(reasons.serving_message_text_only(i), details={"param": "messages"})
            content = "\n".join(str(p.get("text", "")) for p in content)
        if not isinstance(content, str):
            raise ValidationFailed(reasons.serving_message_content(i), details={"param": "messages"})
        messages.append({"role": message["role"], "content": content})
    return messages


def _stream(pieces: Iterator[str], outcome: Outcome, head: dict, body: dict, chunk, done, opening=None) -> Response:
    """Server-sent events as vLLM sends them: a chunk per piece of text, a last chunk with the finish
    reason, a usage chunk when `stream_options.include_usage` asks for it, then `[DONE]`."""
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

    def events() -> Iterator[str]:
        try:
            if opening is not None:
                yield _sse(opening)
            for piece in pieces:
                yield _sse(chunk(piece, None))
            yield _sse(chunk("", outcome.finish_reason))
            if include_usage:
                yield _sse({**head, "object": chunk("", None)["object"], "choices": [], "usage": _usage(outcome)})
        except Exception as exc:  # the status line is sent already: report in the stream, like vLLM
            yield _sse(error_body(500, reasons.generation_failed(reasons.error_text(exc))))
        finally:
            pieces.close()
            done()
        yield _sse("[DONE]")

    return Response(events(), mimetype="text/event-stream", headers={"Cache-Control": "no-cache"})
