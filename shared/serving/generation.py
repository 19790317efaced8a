"""Generation for the built-in serving process: plain Python over a loaded model, no web framework.

One `Generator` owns the model (a PeftModel once any adapter is attached), its tokenizer and a lock.
Every generation, and every adapter load or unload, holds the lock: one request at a time, which is
what makes the built-in server batch-invariant (a prompt's greedy output never depends on what else
is in flight). Generation runs in a worker thread that feeds token ids to the request thread, so a
response can stream; a client that goes away cancels its generation at the next token.
"""

from __future__ import annotations

import copy
import dataclasses
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from shared import reasons
from shared.errors import NotFound, ValidationFailed
from shared.images import image_parts
from shared.load_spec import LoadSpec, config_max_context, default_max_tokens, sampling_defaults
from shared.models import load_processor
from shared.prompts import model_extras, placeholder_token_ids, prompt_token_ids, reads_images
from shared.serving.adapter_fold import FoldedAdapter
from shared.serving.adapter_slots import AdapterSlots
from shared.serving.image_inputs import encode, message_images, pixel_inputs

_DONE = object()


# The most completions one request may ask for (`n`): a GRPO group is rarely above 64.
MAX_N = 256  # completions one generation holds: n, or n times the prompts of a request


@dataclass(frozen=True)
class SamplingParams:
    """A request's sampling settings, over the model's defaults (`shared.load_spec.sampling_defaults`)."""

    max_tokens: int
    temperature: float  # 0: greedy
    top_p: float
    top_k: int  # 0: no top-k filter
    repetition_penalty: float
    stop: tuple[str, ...] = ()
    seed: int | None = None
    n: int = 1  # completions of the prompt, sampled together (`Generator.generate_many`)
    # False: the request named no max_tokens, so `max_tokens` is the model's default, which
    # `Generator.fit_to_context` cuts to the rest of the context after the prompt (as vLLM does)
    max_tokens_named: bool = True

    @classmethod
    def from_request(cls, body: dict[str, Any], defaults: dict[str, Any]) -> SamplingParams:
        def number(name: str, kind, low: float, high: float | None = None):
            value = body.get(name)
            if value is None:
                return kind(defaults[name])
            if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and value != int(value)):
                raise ValidationFailed(reasons.serving_parameter_not_number(name, kind is int), details={"param": name})
            if value < low or (high is not None and value > high):
                raise ValidationFailed(reasons.serving_parameter_out_of_bounds(name, low, high, value),
                                       details={"param": name})
            return kind(value)

        n = body.get("n", 1)
        if n is None:
            n = 1
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_N:
            raise ValidationFailed(reasons.serving_n_invalid(MAX_N), details={"param": "n"})
        if n > 1 and body.get("stream"):
            raise ValidationFailed(reasons.SERVING_N_STREAM, details={"param": "n"})
        if body.get("logprobs") not in (None, False) or body.get("best_of") not in (None, 1):
            raise ValidationFailed(reasons.SERVING_LOGPROBS, details={"param": "logprobs"})
        stop = body.get("stop")
        stop = [stop] if isinstance(stop, str) else (stop or [])
        if not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop):
            raise ValidationFailed(reasons.SERVING_STOP, details={"param": "stop"})
        seed = body.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ValidationFailed(reasons.SERVING_SEED, details={"param": "seed"})
        if body.get("max_completion_tokens") is not None:  # the chat API's newer name for max_tokens
            body = {**body, "max_tokens": body["max_completion_tokens"]}
        named = body.get("max_tokens") is not None
        top_p = number("top_p", float, 0.0, 1.0)
        if top_p == 0:
            raise ValidationFailed(reasons.SERVING_TOP_P_ZERO, details={"param": "top_p"})
        return cls(
            max_tokens=number("max_tokens", int, 1),
            temperature=number("temperature", float, 0.0, 2.0),
            top_p=top_p,
            top_k=max(number("top_k", int, -1), 0),  # vLLM's -1 (and 0) mean no top-k filter
            repetition_penalty=number("repetition_penalty", float, 0.01),
            stop=tuple(stop),
            seed=seed,
            n=n,
            max_tokens_named=named,
        )


@dataclass
class Sampled:
    """One completion of `Generator.generate_many`: its token ids (up to and including the end-of-
    sequence token, as vLLM's `return_token_ids` gives them), its text and why it ended."""

    token_ids: list[int]
    text: str
    finish_reason: str  # "stop" (end of sequence or a stop string) or "length"


@dataclass
class Outcome:
    """What a finished generation produced; filled in as its text streams."""

    prompt_tokens: int
    completion_tokens: int = 0
    finish_reason: str | None = None  # "stop" (end of sequence or a stop string) or "length"
    text: list[str] = field(default_factory=list)


class _TokenQueue:
    """A transformers streamer (put/end) that hands generated token ids to the request thread."""

    def __init__(self):
        self.items: queue.Queue = queue.Queue()
        self._prompt_seen = False

    def put(self, value):
        if not self._prompt_seen:  # generate() first puts the prompt itself
            self._prompt_seen = True
            return
        self.items.put(value.reshape(-1).tolist())

    def end(self):
        self.items.put(_DONE)


class Generator:
    def __init__(self, model, tokenizer, spec: LoadSpec):
        self.model = model
        self.tokenizer = tokenizer
        self.spec = spec
        # An image-text model reads chat messages with image parts through its processor (image_inputs.py).
        self.processor = load_processor(spec.model_dir) if reads_images(model) else None
        self.suppressed = placeholder_token_ids(model)
        # The adapters served, unmerged (PEFT slots beside the base weights) or one folded into them.
        self.held: AdapterSlots | FoldedAdapter
        if spec.adapter_mode == "folded":
            self.held = FoldedAdapter()
            for name, directory in spec.adapters.items():  # one at most (LoadSpec checks)
                self.model = self.held.load(self.model, name, directory)
        else:
            self.held = AdapterSlots(spec.adapters)
        self.defaults = sampling_defaults(spec.generation_config)
        self.max_context = config_max_context(model.config)
        # Every generation here names max_new_tokens (the request's max_tokens, by default the model's
        # max_new_tokens or the deployment's limit, within the context); a model's max_length (Llama 3 says 4096) changes nothing but makes
        # transformers warn on every generation that both are set.
        model.generation_config.max_length = None
        eos = model.generation_config.eos_token_id
        self.eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        # what shorter prompts of one batch are left-padded with (masked out: any id would do)
        self.pad_id = next((i for i in (tokenizer.pad_token_id, *sorted(self.eos_ids)) if i is not None), 0)
        self.lock = threading.Lock()
        self.stopping = threading.Event()  # set once at shutdown: every generation ends at its next token

    @property
    def adapters(self) -> dict[str, str]:
        """The adapters served, by name: their directories."""
        return self.held.paths

    def shutdown(self, timeout_s: float = 10.0) -> bool:
        """Cancel generations and wait for the model to be idle, so the process never exits while a
        thread is inside torch (which aborts the interpreter). False if it did not get idle in time."""
        self.stopping.set()
        return self.lock.acquire(timeout=timeout_s)

    # --- models and adapters -------------------------------------------------------------------
    def check_model(self, name: str | None) -> str:
        """The model name a request runs on (the base when it names none); unknown names are 404."""
        if name is None or name == self.spec.served_model_name or name in self.adapters:
            name = name or self.spec.served_model_name
            self.held.check_servable(name)  # a folded server answers for its adapter only
            return name
        raise NotFound(reasons.serving_model_unknown(name), details={"param": "model"})

    def load_adapter(self, name: str, path: str) -> list[str]:
        """Serve the adapter in `path` as `name`. Returns the names it replaced: in adapterMode folded
        the adapter folded before (none unmerged, where adapters are served side by side)."""
        with self.lock:
            if name in self.adapters or name == self.spec.served_model_name:
                raise ValidationFailed(reasons.serving_adapter_twice(name), details={"param": "lora_name"})
            before = list(self.adapters)
            self.model = self.held.load(self.model, name, path)
            self.model.eval()
            return [old for old in before if old not in self.adapters]

    def unload_adapter(self, name: str) -> None:
        with self.lock:
            if name not in self.adapters:
                raise NotFound(reasons.serving_adapter_unknown(name), details={"param": "lora_name"})
            self.model = self.held.unload(self.model, name)

    def update_weights(self, path: str) -> int:
        """Replace the base model's weights with the safetensors files of directory `path` (every
        weight, by its Hugging Face name); returns how many tensors were loaded.

        The old way of syncing a trainer with its rollout server (fold the adapter into the base
        weights and send them all), kept so bench/grpo_handoff.py can compare it with the adapter
        hand-off on the same server. Refused while adapters are loaded: they sit on those weights.
        """
        from pathlib import Path

        from safetensors.torch import load_file

        files = sorted(Path(path).glob("*.safetensors"))
        if not files:
            raise ValidationFailed(reasons.serving_no_weights(path), details={"param": "path"})
        with self.lock:
            if self.adapters:
                raise ValidationFailed(reasons.SERVING_WEIGHTS_UNDER_ADAPTERS, details={"param": "path"})
            state: dict = {}
            for file in files:
                state.update(load_file(str(file)))
            result = self.model.load_state_dict(state, strict=False)
            tied = {"lm_head.weight"} if getattr(self.model.config, "tie_word_embeddings", False) else set()
            missing = set(result.missing_keys) - tied
            if missing or result.unexpected_keys:
                raise ValidationFailed(reasons.serving_weights_mismatch(path, sorted(missing)[:3],
                                                                        sorted(result.unexpected_keys)[:3]),
                                       details={"param": "path"})
            return len(state)

    # --- prompts -------------------------------------------------------------------------------
    def encode_prompt(self, prompt: str) -> list[int]:
        return prompt_token_ids(self.tokenizer, prompt)

    def encode_chat(self, messages: list[dict[str, Any]]) -> list[int]:
        return prompt_token_ids(self.tokenizer, messages)

    def encode_chat_inputs(self, messages: list[dict[str, Any]]) -> tuple[list[int], dict[str, Any]]:
        """A chat prompt's token ids and the other inputs the model reads with them: for messages
        with image parts (an image-text model's), each image expanded into its tokens, its pixel
        values and the sequence extras (image_inputs.py); for text, none."""
        if self.processor is None or not any(image_parts(m.get("content")) for m in messages):
            return self.encode_chat(messages), {}
        images = message_images(messages)
        encoded = encode(self.processor, messages, generation_prompt=True, images=images)
        extras = {key: [value] for key, value in encoded.items() if key != "input_ids"}
        return encoded["input_ids"], {**extras, **pixel_inputs(self.processor, images)}

    def fit_to_context(self, params: SamplingParams, prompts: list[list[int]]) -> SamplingParams:
        """`params` with a max_tokens the request did not name cut to what the context leaves after
        the longest prompt (shared/load_spec.default_max_tokens, vLLM's rule); a named one as it is,
        for `check_length` to judge."""
        if params.max_tokens_named:
            return params
        longest = max(map(len, prompts), default=0)
        return dataclasses.replace(params, max_tokens=default_max_tokens(
            params.max_tokens, max_context=self.max_context, prompt_tokens=longest))

    def check_length(self, prompt_ids: list[int], params: SamplingParams) -> None:
        asked = len(prompt_ids) + params.max_tokens
        if self.max_context and asked > self.max_context:
            raise ValidationFailed(
                reasons.serving_context_too_long(most=self.max_context, asked=asked, prompt=len(prompt_ids),
                                                 completion=params.max_tokens),
                details={"param": "max_tokens"},
            )

    # --- generation ----------------------------------------------------------------------------
    def _generation_config(self, params: SamplingParams):
        """The request's settings as a GenerationConfig. Every setting is given a value, never None:
        `generate` fills a None from the model's own generation_config, so a request asking for no
        top-k filter or no repetition penalty would get the model's defaults instead (top_k 20 and
        repetition_penalty 1.05 for Qwen2.5, top_k 64 for Gemma 3). 0 and 1.0 turn them off."""
        config = copy.deepcopy(self.model.generation_config)
        if self.suppressed:  # never generated: the model would read one as an image without its pixels
            config.suppress_tokens = sorted({*(config.suppress_tokens or []), *self.suppressed})
        config.max_new_tokens = params.max_tokens
        # Keys and values of the tokens so far are kept, so each new token is one pass over itself
        # alone: a config saved from a training run with activation checkpointing may say use_cache false.
        config.use_cache = True
        config.min_new_tokens = None
        config.repetition_penalty = params.repetition_penalty
        config.do_sample = params.temperature > 0
        if config.do_sample:
            config.temperature, config.top_p, config.top_k = params.temperature, params.top_p, params.top_k
        else:  # greedy ignores them; transformers' own defaults, so that it does not warn that they are set
            config.temperature, config.top_p, config.top_k = 1.0, 1.0, 50
        return config

    def _run(self, prompt_ids: list[int], params: SamplingParams, model_name: str, streamer, cancel,
             extras: dict[str, Any] | None = None) -> None:
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList

        generator = self

        class Cancelled(StoppingCriteria):
            def __call__(self, input_ids, scores, **kwargs):
                stop = cancel.is_set() or generator.stopping.is_set()
                return torch.full((input_ids.shape[0],), stop, dtype=torch.bool, device=input_ids.device)

        try:
            with self.lock:
                if cancel.is_set() or self.stopping.is_set():
                    return
                if params.seed is not None:
                    torch.manual_seed(params.seed)
                device = next(self.model.parameters()).device
                ids = torch.tensor([prompt_ids], device=device)
                kwargs = dict(
                    input_ids=ids,
                    attention_mask=torch.ones_like(ids),
                    generation_config=self._generation_config(params),
                    streamer=streamer,
                    stopping_criteria=StoppingCriteriaList([Cancelled()]),
                    **model_extras(extras, device, dtype=next(self.model.parameters()).dtype),
                )
                with torch.inference_mode(), self.held.serving(self.model, model_name):
                    self.model.generate(**kwargs)
        except BaseException as exc:  # handed to the request thread, which raises it
            streamer.items.put(exc)
        finally:
            streamer.end()

    def generate(self, prompt_ids: list[int], params: SamplingParams, model_name: str, outcome: Outcome,
                 extras: dict[str, Any] | None = None) -> Iterator[str]:
        """Yield the completion's text as it grows; `outcome` holds the counts and finish reason at the end.

        Stop strings are cut out as vLLM does (the text ends before the stop string); text that could
        be the start of a stop string, or of a multi-byte character, is held back until it is not.
        """
        streamer, cancel = _TokenQueue(), threading.Event()
        worker = threading.Thread(target=self._run, args=(prompt_ids, params, model_name, streamer, cancel, extras),
                                  daemon=True)
        worker.start()
        token_ids: list[int] = []
        sent = 0
        hold = max((len(s) for s in params.stop), default=1) - 1
        try:
            while True:
                item = streamer.items.get()
                if item is _DONE:
                    break
                if isinstance(item, BaseException):
                    raise item
                token_ids.extend(item)
                text = self.tokenizer.decode(token_ids, skip_special_tokens=True)
                cut = min((i for i in (text.find(s) for s in params.stop) if i >= 0), default=-1)
                if cut >= 0:
                    outcome.finish_reason = "stop"
                    cancel.set()
                    yield from self._emit(outcome, text[sent:cut])
                    break
                ready = len(text) - hold
                if not text.endswith("\ufffd") and ready > sent:
                    yield from self._emit(outcome, text[sent:ready])
                    sent = ready
            if outcome.finish_reason is None:
                text = self.tokenizer.decode(token_ids, skip_special_tokens=True)
                yield from self._emit(outcome, text[sent:])
                ended = bool(token_ids) and token_ids[-1] in self.eos_ids
                outcome.finish_reason = "stop" if ended or len(token_ids) < params.max_tokens else "length"
            outcome.completion_tokens = len(token_ids)
        finally:
            cancel.set()  # a client that stopped reading frees the model at the next token

    def generate_many(self, prompts: list[list[int]], params: SamplingParams, model_name: str,
                      extras: dict[str, Any] | None = None) -> list[list[Sampled]]:
        """`params.n` completions of each prompt, all sampled in one batch (no streaming).

        What a reinforcement run's rollouts need: a group of completions per prompt with their
        token ids, a step's groups together. Shorter prompts are left-padded behind the attention
        mask, so each row continues its own prompt; a single prompt is not padded at all. With a
        seed the whole batch repeats exactly. A stop string cuts a completion's text and token ids
        at the first token whose text reaches it. `extras`: one prompt's other inputs
        (`encode_chat_inputs`: an image-text prompt's pixel values), given to every row.
        """
        import torch

        assert extras is None or len(prompts) == 1, "a prompt's pixels belong to that prompt alone"
        width = max(map(len, prompts))
        with self.lock:
            if self.stopping.is_set():
                raise ValidationFailed(reasons.SERVING_STOPPING)
            if params.seed is not None:
                torch.manual_seed(params.seed)
            param = next(self.model.parameters())
            rows = [p for p in prompts for _ in range(params.n)]
            ids = torch.tensor([[self.pad_id] * (width - len(p)) + p for p in rows], device=param.device)
            mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in rows], device=param.device)
            kwargs = dict(input_ids=ids, attention_mask=mask,
                          generation_config=self._generation_config(params),
                          **{key: torch.cat([value] * params.n) for key, value in model_extras(
                              extras, param.device, dtype=param.dtype).items()})
            with torch.inference_mode(), self.held.serving(self.model, model_name):
                out = self.model.generate(**kwargs)
        sampled = [self._sampled(row[width:].tolist(), params) for row in out]
        return [sampled[i * params.n:(i + 1) * params.n] for i in range(len(prompts))]

    def _sampled(self, generated: list[int], params: SamplingParams) -> Sampled:
        token_ids: list[int] = []
        for token in generated:  # rows that ended early are padded after their end-of-sequence token
            token_ids.append(token)
            if token in self.eos_ids:
                return Sampled(*self._cut(token_ids, params, "stop"))
        return Sampled(*self._cut(token_ids, params, "length" if len(token_ids) >= params.max_tokens else "stop"))

    def _cut(self, token_ids: list[int], params: SamplingParams, finish: str) -> tuple[list[int], str, str]:
        text = self.tokenizer.decode(token_ids, skip_special_tokens=True)
        if not params.stop or not any(s in text for s in params.stop):
            return token_ids, text, finish
        for end in range(1, len(token_ids) + 1):
            head = self.tokenizer.decode(token_ids[:end], skip_special_tokens=True)
            cut = min((i for i in (head.find(s) for s in params.stop) if i >= 0), default=-1)
            if cut >= 0:
                return token_ids[:end], head[:cut], "stop"
        return token_ids, text, finish

    @staticmethod
    def _emit(outcome: Outcome, piece: str) -> Iterator[str]:
        if piece:
            outcome.text.append(piece)
            yield piece
