"""JSON that users send (shared/schemas/json_values.py): nesting bounded, lone surrogates refused with
where they are, and everything else parsed exactly as json.loads parses it."""

from __future__ import annotations

import json

import pytest

from shared import reasons
from shared.schemas.json_values import MAX_DEPTH, MAX_INTEGER_DIGITS, JsonRefused, loads, refusal


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("text", [
    '{"a": [1, {"b": "c"}], "d": null}',
    nested(MAX_DEPTH),
    '"\\ud83d\\ude00 a pair is text"',
    '"\\\\ud800 is an escaped backslash, then letters"',
    '"one\u2028two\u2029three\x85"',
    '{"k": "' + "[" * 200 + '"}',  # brackets inside a string nest nothing
])
def test_json_within_the_bounds_parses_as_json_does(text):
    assert loads(text) == json.loads(text) == loads(text.encode("utf-8")) == loads(text.encode("utf-16"))


@pytest.mark.parametrize("text", [nested(MAX_DEPTH + 1), nested(990), nested(100_000),
                                  '{"a": ' + nested(MAX_DEPTH) + "}"])
def test_json_nested_past_the_bound_is_refused_whatever_the_depth(text):
    with pytest.raises(JsonRefused) as refused:
        loads(text)
    assert (refused.value.field, refused.value.problem) == (None, reasons.json_too_deep(MAX_DEPTH))


@pytest.mark.parametrize("text, field, code", [
    ('"\\ud800"', None, 0xD800),
    ('{"messages": [{"role": "user", "content": "x\\udfff"}]}', "messages[0].content", 0xDFFF),
    ('{"a": {"b": ["ok", "\\uDBFF"]}}', "a.b[1]", 0xDBFF),
    ('{"a": "\\ude00\\ud83d"}', "a", 0xDE00),  # a pair the wrong way round is two lone halves
])
def test_a_lone_surrogate_is_refused_naming_where_it_is(text, field, code):
    with pytest.raises(JsonRefused) as refused:
        loads(text)
    assert (refused.value.field, refused.value.problem) == (field, reasons.lone_surrogate(code))


def test_a_lone_surrogate_in_a_key_names_the_object_holding_it():
    with pytest.raises(JsonRefused) as refused:
        loads('{"rows": {"\\ud800": 1}}')
    assert (refused.value.field, refused.value.problem) == ("rows", reasons.lone_surrogate_in_key(0xD800))


def test_bytes_json_reads_with_surrogatepass_are_refused_too():
    with pytest.raises(JsonRefused):
        loads(b'"\xed\xa0\x80"')  # CESU-8 for U+D800


def test_not_json_is_json_s_own_error():
    with pytest.raises(json.JSONDecodeError):
        loads("{nope")
    with pytest.raises(UnicodeDecodeError):
        loads(b'"\xff"')


def test_refusal_walks_values_nested_deeper_than_the_interpreter_stack():
    value: list = []
    for _ in range(50_000):
        value = [value]
    assert refusal(value).problem == reasons.json_too_deep(MAX_DEPTH)
    assert refusal({"fine": [1, "two", {"three": None}]}) is None


@pytest.mark.parametrize("text, field, token", [
    ('{"a": NaN}', "a", "NaN"),
    ('[1, Infinity]', "[1]", "Infinity"),
    ('{"a": {"b": -Infinity}}', "a.b", "-Infinity"),
    ('{"lr": 1e400}', "lr", "1e400"),
    ('{"lr": -2.5E+999}', "lr", "-2.5E+999"),
    ("NaN", None, "NaN"),
])
def test_a_number_that_is_not_finite_is_refused_naming_where_it_is(text, field, token):
    with pytest.raises(JsonRefused) as refused:
        loads(text)
    assert (refused.value.field, refused.value.problem) == (field, reasons.number_not_finite(token))


def test_an_integer_past_the_digit_bound_is_refused_naming_where_it_is():
    assert loads('{"n": ' + "9" * MAX_INTEGER_DIGITS + "}") == {"n": int("9" * MAX_INTEGER_DIGITS)}
    for sign in ("", "-"):
        with pytest.raises(JsonRefused) as refused:
            loads('{"rows": [{"n": ' + sign + "9" * (MAX_INTEGER_DIGITS + 1) + "}]}")
        assert (refused.value.field, refused.value.problem) == (
            "rows[0].n", reasons.number_too_long(MAX_INTEGER_DIGITS + 1, MAX_INTEGER_DIGITS))


def test_numbers_within_the_bounds_parse_as_json_does():
    text = '{"a": [0, -0, 1.5, -2e-300, 1e308, 12345678901234567890, -7]}'
    assert loads(text) == json.loads(text)
