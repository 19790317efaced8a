"""Reward functions (SPEC 4) and the judge protocol, shared by reinforcement runs and evaluations.

A reward is one entry of a plan's `grpo.rewards` (or an evaluation's `rewards`): either
`{function: NAME, weight, ...parameters}` or `{judge: ENDPOINT, weight}` (an endpoint's id, or a
live endpoint's name: shared/rewards/judges.py).

Built-in functions, each `(completion, row, **parameters) -> float | None`:

    exact_match  1.0 when the completion equals the row's `field` (default `answer`), compared with
                 whitespace collapsed and ends stripped; else 0.0. None when the row has no such
                 field (the row is not scored by it).
    regex        1.0 when the whole completion (ends stripped) matches `pattern` (a full match,
                 `.` matching newlines too): a format check; else 0.0. Matched by RE2
                 (google-re2), in time linear in the completion whatever the pattern: a pattern
                 such as `(.*.*)*Z`, which backtracks for ages in Python's `re`, cannot stall a
                 worker. RE2 has no backreferences, lookahead or lookbehind; `check_rewards`
                 refuses a pattern that uses them, naming the field and the construct.
    length       a penalty for missing a `target` length in characters: -|len - target| / target,
                 0.0 at the target, -1.0 at nothing or at twice the target.

A deployment registers its own under `rewardFunctions: {NAME: "package.module:function"}` in its
config; they take the same arguments and are looked up by name like the built-in ones.

Parameters are the entry's keys beside `function`, `judge` and `weight`, passed as keyword
arguments; one set to null counts as not given. A built-in function takes only its own (listed
above). A registered function takes what its signature names after `(completion, row)`, or
anything when it has `**kwargs`; `check_rewards` reads the signature and refuses a parameter it does
not take, or one it needs that is missing. The API reads it from the module's source without running
it (`static_signature`: a deployment's module may import torch or do anything at import time); the
worker, which runs the function, imports it (`imported=True`). Where the signature cannot be read so
(no source found, the name is not a plain `def`), the check waits for the worker, which fails the
work saying why.

A deployment's registered functions run, each call under a time budget, in a process of their own
(shared/rewards/process.py); the built-in ones run where they are called.

A judge is an endpoint asked, through its OpenAI chat API, to score a completion; its answer is
parsed to a number by `parse_judge_score` (None when it holds none: the caller records that).
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.machinery
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import re2

from shared import reasons
from shared.errors import ValidationFailed

RewardFunction = Callable[..., "float | None"]


def _collapse(text: str) -> str:
    return " ".join(str(text).split())


def exact_match(completion: str, row: Mapping[str, Any], *, field: str | None = None) -> float | None:
    field = field or "answer"
    if field not in row or row[field] is None:
        return None
    return 1.0 if _collapse(completion) == _collapse(row[field]) else 0.0


def regex(completion: str, row: Mapping[str, Any], *, pattern: str) -> float:
    return 1.0 if compile_pattern(pattern).fullmatch(completion.strip()) is not None else 0.0


def _pattern_options() -> re2.Options:
    options = re2.Options()
    options.dot_nl = True  # as re.DOTALL: a format check spans the completion's lines
    options.log_errors = False  # a refused pattern is the caller's sentence, not a line on stderr
    return options


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern: str):
    """A reward pattern compiled by RE2 (cached: a reward matches every completion of a run).
    Raises re2.error, whose text names the construct RE2 refuses."""
    return re2.compile(pattern, _pattern_options())


def pattern_problem(pattern: str) -> str | None:
    """Why RE2 refuses `pattern` (e.g. `invalid perl operator: (?=`), or None when it compiles."""
    try:
        compile_pattern(pattern)
    except re2.error as exc:
        problem = exc.args[0] if exc.args else exc
        return problem.decode(errors="replace") if isinstance(problem, bytes) else str(problem)
    return None


def length(completion: str, row: Mapping[str, Any], *, target: int) -> float:
    return -abs(len(completion) - target) / target


BUILTIN: dict[str, RewardFunction] = {"exact_match": exact_match, "regex": regex, "length": length}
# The parameters each built-in function takes from its reward entry (None values are left out).
BUILTIN_PARAMETERS: dict[str, tuple[str, ...]] = {"exact_match": ("field",), "regex": ("pattern",),
                                                  "length": ("target",)}
# The keys of a reward entry that are not parameters of its function.
ENTRY_KEYS = ("function", "judge", "weight")


def parameters_of(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters a reward entry gives its function: its other keys, those set to null left out."""
    return {k: v for k, v in entry.items() if k not in ENTRY_KEYS and v is not None}


def load_registered(reference: str) -> RewardFunction:
    """The callable a config names as "package.module:function"; ValidationFailed if it is not one."""
    module_name, _, attribute = reference.partition(":")
    try:
        function = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ValidationFailed(reasons.reward_unloadable(reference, reasons.error_text(exc)),
                               details={"reference": reference}) from None
    if not callable(function):
        raise ValidationFailed(reasons.reward_not_callable(reference), details={"reference": reference})
    return function


def reward_key(rewards: list[Mapping[str, Any]], index: int) -> str:
    """The name a reward's metrics go under: the function name, or `judge:ENDPOINT` (as the entry
    names it); a name used twice in one list gets `#N` (its 1-based place) after it."""
    def base(entry: Mapping[str, Any]) -> str:
        return entry["function"] if entry.get("function") else f"judge:{entry.get('judge')}"

    name = base(rewards[index])
    if sum(1 for entry in rewards if base(entry) == name) > 1:
        return f"{name}#{index + 1}"
    return name


class Signature(NamedTuple):
    """What a reward function takes by keyword beside `(completion, row)`."""

    takes: tuple[str, ...]  # every parameter it can be given by name
    needs: tuple[str, ...]  # those with no default
    any_keyword: bool  # it has **kwargs, so it takes any name


def signature_of(function: Callable[..., Any]) -> Signature | None:
    """The keyword parameters of a reward function, read from its signature; None when Python cannot
    read one (some builtins and C callables), so nothing can be checked."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    positional, takes, needs, any_keyword = 2, [], [], False  # completion and row come first, by position
    for p in parameters:
        if p.kind is p.VAR_KEYWORD:
            any_keyword = True
        elif p.kind is p.VAR_POSITIONAL:
            positional = 0
        elif positional and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            positional -= 1
        elif p.kind is not p.POSITIONAL_ONLY:
            takes.append(p.name)
            if p.default is p.empty:
                needs.append(p.name)
    return Signature(tuple(takes), tuple(needs), any_keyword)


def _module_source(module_name: str) -> str | None:
    """The source of a module found on sys.path, without importing it or its parent packages."""
    path = None
    for part in module_name.split("."):
        found = importlib.machinery.PathFinder.find_spec(part, path)
        if found is None:
            return None
        path = found.submodule_search_locations
    if found.origin is None or not found.origin.endswith(".py"):
        return None
    try:
        return Path(found.origin).read_text()
    except OSError:
        return None


def _signature_of_def(node: ast.FunctionDef | ast.AsyncFunctionDef) -> Signature:
    """`signature_of` for a function's syntax tree (what inspect would say of the defined function)."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    with_default = len(args.defaults)  # the last ones of `positional` have defaults
    takes, needs = [], []
    for i, arg in enumerate(positional):
        if i < 2 or i < len(args.posonlyargs):  # completion and row come first, by position
            continue
        takes.append(arg.arg)
        if i < len(positional) - with_default:
            needs.append(arg.arg)
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        takes.append(arg.arg)
        if default is None:
            needs.append(arg.arg)
    return Signature(tuple(takes), tuple(needs), args.kwarg is not None)


def static_signature(reference: str) -> Signature | None:
    """The signature of a registered "package.module:function", read from the module's source
    without running any of it; None when it cannot be read so (the worker checks it then)."""
    module_name, _, attribute = reference.partition(":")
    try:
        source = _module_source(module_name)
        tree = ast.parse(source) if source is not None else None
    except (ImportError, ValueError, SyntaxError):
        return None
    if tree is None:
        return None
    found = None
    for node in tree.body:  # the last top-level binding of the name wins, as it would on import
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == attribute:
            found = node
        elif _binds(node, attribute):
            found = None
    if found is None or found.decorator_list:  # a decorator may change what the name is
        return None
    return _signature_of_def(found)


def _binds(node: ast.stmt, name: str) -> bool:
    """True when a top-level statement binds `name` otherwise than by a plain def."""
    if isinstance(node, ast.ClassDef):
        return node.name == name
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((alias.asname or alias.name.split(".")[0]) == name for alias in node.names)
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    return any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t))


def check_rewards(rewards: list[Mapping[str, Any]], *, registered: Mapping[str, str] | None = None,
                  field_prefix: str = "grpo.rewards", imported: bool = False) -> None:
    """Refuse (ValidationFailed, naming the field) a reward list that could not be scored.

    A registered function's signature is read from its source (`static_signature`), or, with
    `imported`, from the function itself once imported (where it is about to run anyway)."""
    registered = registered or {}
    for i, entry in enumerate(rewards):
        where = f"{field_prefix}.{i}"
        function, judge = entry.get("function"), entry.get("judge")
        if bool(function) == bool(judge):
            raise ValidationFailed(reasons.reward_function_or_judge(where, both=bool(function)), details={"field": where})
        parameters = parameters_of(entry)
        if judge:
            if parameters:
                name = next(iter(parameters))
                raise ValidationFailed(reasons.reward_judge_parameter(where, name),
                                       details={"field": f"{where}.{name}"})
            continue
        if function not in BUILTIN and function not in registered:
            known = sorted({*BUILTIN, *registered})
            raise ValidationFailed(reasons.reward_function_unknown_here(where, function, known),
                                   details={"field": f"{where}.function", "known": known})
        if function in BUILTIN:
            _check_parameters(where, function, parameters, Signature(BUILTIN_PARAMETERS[function], (), False))
            _check_builtin(where, function, entry)
            continue
        signature = _registered_signature(registered[function], imported=imported)
        if signature is not None:
            _check_parameters(where, function, parameters, signature)


def _registered_signature(reference: str, *, imported: bool) -> Signature | None:
    if not imported:
        return static_signature(reference)
    try:
        loaded = load_registered(reference)
    except Exception:  # not importable in this process, whatever its module raised:
        return None  # the scoring itself imports it, or fails the work saying why
    return signature_of(loaded)


def _check_parameters(where: str, function: str, parameters: Mapping[str, Any], signature: Signature) -> None:
    if not signature.any_keyword:
        for name in parameters:
            if name not in signature.takes:
                raise ValidationFailed(reasons.reward_parameter_unknown(where, function, name, list(signature.takes)),
                                       details={"field": f"{where}.{name}", "takes": list(signature.takes)})
    for name in signature.needs:
        if name not in parameters:
            raise ValidationFailed(reasons.reward_parameter_missing(where, function, name),
                                   details={"field": f"{where}.{name}", "takes": list(signature.takes)})


def _check_builtin(where: str, function: str, entry: Mapping[str, Any]) -> None:
    if function == "exact_match" and entry.get("field") is not None and not isinstance(entry["field"], str):
        raise ValidationFailed(reasons.reward_parameter_type(where, function, "field", reasons.REWARD_FIELD_TYPE,
                                                             entry["field"]),
                               details={"field": f"{where}.field"})
    if function == "regex":
        if entry.get("pattern") is not None and not isinstance(entry["pattern"], str):
            raise ValidationFailed(reasons.reward_parameter_type(where, function, "pattern", reasons.REWARD_PATTERN_TYPE,
                                                                 entry["pattern"]),
                                   details={"field": f"{where}.pattern"})
        if not entry.get("pattern"):
            raise ValidationFailed(reasons.regex_reward_without_pattern(where), details={"field": f"{where}.pattern"})
        problem = pattern_problem(entry["pattern"])
        if problem is not None:
            raise ValidationFailed(reasons.reward_pattern_refused(where, problem), details={"field": f"{where}.pattern"})
    target = entry.get("target")
    if function == "length" and not (isinstance(target, int) and not isinstance(target, bool) and target > 0):
        raise ValidationFailed(reasons.length_reward_without_target(where), details={"field": f"{where}.target"})


def function_of(entry: Mapping[str, Any], registered: Mapping[str, str] | None = None) -> Callable[[str, Mapping], float | None]:
    """A reward entry's function as `(completion, row) -> float | None`, its parameters bound."""
    name = entry["function"]
    if name in BUILTIN:
        function = BUILTIN[name]
        params = {p: entry[p] for p in BUILTIN_PARAMETERS[name] if entry.get(p) is not None}
    else:
        if not registered or name not in registered:
            raise ValidationFailed(reasons.reward_function_missing(name), details={"function": name})
        function = load_registered(registered[name])
        params = parameters_of(entry)

    def bound(completion: str, row: Mapping[str, Any]) -> float | None:
        value = function(completion, row, **params)
        return None if value is None else float(value)

    return bound


def weighted_total(rewards: list[Mapping[str, Any]], scores: Mapping[str, float | None]) -> float:
    """The reward a completion gets: the weighted sum of its scores (a missing score counts 0)."""
    return sum(float(entry.get("weight", 1.0)) * float(scores.get(reward_key(rewards, i)) or 0.0)
               for i, entry in enumerate(rewards))


# --- Judges

JUDGE_SYSTEM_PROMPT = (
    "You grade answers. Reply with one number from 0 to 10 and nothing else: 10 for a correct, "
    "complete answer, 0 for a wrong or empty one."
)
# RE2 too, like reward patterns: a judge's answer is text a model made up, parsed in linear time.
_NUMBER = re2.compile(r"(-?\d+(?:\.\d+)?)(?:\s*/\s*(\d+(?:\.\d+)?))?", _pattern_options())


def judge_messages(prompt: Any, completion: str, row: Mapping[str, Any] | None = None) -> list[dict[str, str]]:
    """The chat a judge is sent for one completion (the reference answer too when the row has one)."""
    if isinstance(prompt, list):
        prompt = "\n".join(f"{m.get('role')}: {m.get('content')}" for m in prompt)
    parts = [f"Question:\n{prompt}", f"Answer:\n{completion}"]
    if row and row.get("answer") is not None:
        parts.insert(1, f"Reference answer:\n{row['answer']}")
    return [{"role": "system", "content": JUDGE_SYSTEM_PROMPT}, {"role": "user", "content": "\n\n".join(parts)}]


def parse_judge_score(text: str | None) -> float | None:
    """The judge's score in [0, 1]: the first number of its answer, out of 10 (or out of N when it
    writes `X/N`), clipped. None when the answer holds no number."""
    if not text:
        return None
    found = _NUMBER.search(text)
    if not found:
        return None
    value = float(found.group(1))
    scale = float(found.group(2)) if found.group(2) else 10.0
    if scale <= 0:
        return None
    return min(1.0, max(0.0, value / scale))


def ask_judge(address: str, messages: list[dict[str, str]], *, model: str | None = None, max_tokens: int = 8,
              timeout_s: float = 60.0, session: Any = None, api_key: str | None = None) -> str:
    """One greedy chat completion from a judge's serving process at `address` (with its secret,
    `api_key`, as the bearer token); returns its text. Raises requests.RequestException when it
    cannot be reached or answers with an error."""
    import requests

    body: dict[str, Any] = {"messages": messages, "max_tokens": max_tokens, "temperature": 0}
    if model:
        body["model"] = model
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    response = (session or requests).post(f"{address}/v1/chat/completions", json=body, timeout=timeout_s,
                                          headers=headers)
    response.raise_for_status()
    return response.json()["choices"][0]["message"]["content"] or ""
