"""JSON that users send (API bodies, dataset rows): parsed with a bound on nesting, and holding only
text every later reader takes.

Python's `json` recurses once per level of nesting: a body nested a few thousand levels deep raises
RecursionError (a 500 where it was not caught), and one nested just under the interpreter's limit
parses in the API and then fails wherever it is read again from a deeper stack (a worker, an
engine). So a value may nest `MAX_DEPTH` levels of lists and objects, far more than any plan,
request or dataset row needs.

A JSON string may spell a lone UTF-16 surrogate (`"\\ud800"`): json reads it into a Python string
that is not text, which a tokenizer, a UTF-8 encoder and a terminal refuse later. Such a string is
refused where it arrives, naming where it is.

Numbers: json reads `NaN`, `Infinity` and `-Infinity` (which JSON does not have) and a float too
large for a double (`1e400`) as Python's non-finite floats, which no field, reward or tokenizer
wants; and an integer of more than Python's int(str) limit raises a ValueError that names no place.
Each is refused naming where it is.

`loads(data)` parses and checks; `refusal(value)` checks a parsed value. Both name the place of a
fault as `messages[0].content` (keys dotted, list items in brackets; `None` for the whole value).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from shared import reasons

MAX_DEPTH = 64
# A lone surrogate comes from an escape (or from bytes json reads with "surrogatepass"), so text
# with neither, and with no more brackets than MAX_DEPTH, needs no walk: the common case costs a few
# scans in C.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# Python's own default bound on int(str) (sys.int_info.default_max_str_digits): past it json raises
# a ValueError naming no place; the bound holds here whatever the interpreter's setting.
MAX_INTEGER_DIGITS = 4300


class JsonRefused(ValueError):
    """`problem` (a phrase: "holds a lone surrogate ...") at `field` (None: the whole value)."""

    def __init__(self, field: str | None, problem: str):
        super().__init__(problem if field is None else f"{field} {problem}")
        self.field, self.problem = field, problem


def loads(data: str | bytes) -> Any:
    """The JSON value of `data` (bytes in any encoding json.loads detects); JsonRefused when it nests
    too deep, holds a lone surrogate, a number that is not finite or an integer of more than
    MAX_INTEGER_DIGITS digits; ValueError (json's own, or a UnicodeDecodeError) when it is not JSON."""
    text = data.decode(json.detect_encoding(data), "surrogatepass") if isinstance(data, bytes) else data
    numbers = _Numbers()
    try:
        value = json.loads(text, parse_constant=numbers.constant, parse_float=numbers.real,
                           parse_int=numbers.whole)
    except RecursionError:
        raise JsonRefused(None, reasons.json_too_deep(MAX_DEPTH)) from None
    if (numbers.refused or text.count("[") + text.count("{") > MAX_DEPTH or _SURROGATE_ESCAPE.search(text)
            or _SURROGATE.search(text)):
        problem = refusal(value)
        if problem is not None:
            raise problem
    return value


class _RefusedNumber:
    """Stands in the parsed value for a number that is refused, so the walk can name its place."""

    def __init__(self, problem: str):
        self.problem = problem


class _Numbers:
    """json's number hooks: C parses the common numbers; these see only what needs a word."""

    def __init__(self) -> None:
        self.refused = False

    def _refuse(self, problem: str) -> _RefusedNumber:
        self.refused = True
        return _RefusedNumber(problem)

    def constant(self, token: str) -> _RefusedNumber:  # NaN, Infinity, -Infinity
        return self._refuse(reasons.number_not_finite(token))

    def real(self, token: str) -> float | _RefusedNumber:
        value = float(token)
        return value if math.isfinite(value) else self._refuse(reasons.number_not_finite(token))

    def whole(self, token: str) -> int | _RefusedNumber:
        digits = len(token) - token.startswith("-")
        if digits > MAX_INTEGER_DIGITS:
            return self._refuse(reasons.number_too_long(digits, MAX_INTEGER_DIGITS))
        return int(token)


def refusal(value: Any) -> JsonRefused | None:
    """What is wrong with a parsed JSON value (the first fault, depth first), or None. Iterative,
    so a value nested deeper than the interpreter's stack is walked like any other."""
    stack: list[tuple[Any, str | None, int]] = [(value, None, 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, _RefusedNumber):
            return JsonRefused(where, item.problem)
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return JsonRefused(where, reasons.lone_surrogate(ord(_SURROGATE.search(item).group())))
            continue
        if not isinstance(item, (dict, list)):
            continue
        if depth >= MAX_DEPTH:
            return JsonRefused(None, reasons.json_too_deep(MAX_DEPTH))
        if isinstance(item, dict):
            children = []
            for key, child in item.items():
                place = key if where is None else f"{where}.{key}"
                if _SURROGATE.search(key):
                    return JsonRefused(where, reasons.lone_surrogate_in_key(ord(_SURROGATE.search(key).group())))
                children.append((child, place, depth + 1))
        else:
            children = [(child, f"{where or ''}[{i}]", depth + 1) for i, child in enumerate(item)]
        stack.extend(reversed(children))
    return None
