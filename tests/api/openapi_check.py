"""Checking real answers against the OpenAPI document the API serves (services/api/openapi.py).

A small validator of the part of OpenAPI 3.0's schema language that apispec writes for the read
schemas, strict where a general JSON Schema library would be lenient: a keyword it does not know
fails the check instead of being ignored, and `nullable` is read as OpenAPI 3.0 means it (JSON
Schema has no such keyword). A nullable nested schema is `anyOf: [{$ref}, {type: object,
nullable: true, enum: [null]}]` (services/api/openapi.py): the second alternative is null only, so
a wrong nested object can not pass as "some object".
"""

from __future__ import annotations

import re
from typing import Any

# keywords that say nothing about which values are valid
_ANNOTATIONS = {"description", "default", "title", "format", "example"}
_CHECKED = {"type", "properties", "additionalProperties", "items", "nullable", "$ref", "anyOf", "allOf", "enum",
            "required", "minimum", "maximum"}


def resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].removeprefix("#/components/schemas/")
        schema = document["components"]["schemas"][name]
    return schema


def problems(document: dict[str, Any], schema: dict[str, Any], value: Any, where: str = "answer") -> list[str]:
    """What is wrong with `value` under `schema` (a schema of `document`), one line each; [] when nothing."""
    unknown = set(schema) - _CHECKED - _ANNOTATIONS
    if unknown:
        return [f"{where}: the schema uses {sorted(unknown)}, which this check does not read"]
    if "$ref" in schema:
        return problems(document, resolve(document, schema), value, where)
    if "anyOf" in schema:
        found = [problems(document, s, value, where) for s in schema["anyOf"]]
        return [] if any(not f for f in found) else [line for f in found for line in f]
    if "allOf" in schema:
        found = [line for s in schema["allOf"] for line in problems(document, s, value, where)]
        if found or set(schema) - {"allOf"} - _ANNOTATIONS - {"nullable"}:
            return found or [f"{where}: allOf beside other keywords is not read by this check"]
        return []
    if value is None:
        return [] if schema.get("nullable") or "type" not in schema else [f"{where}: null, and it is not nullable"]
    kind = schema.get("type")
    if kind is not None and not _is(kind, value):
        return [f"{where}: {type(value).__name__} {value!r:.80}, not {kind}"]
    found = []
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if "minimum" in schema and value < schema["minimum"] or "maximum" in schema and value > schema["maximum"]:
        found.append(f"{where}: {value} is out of range")
    if kind == "array":
        for i, item in enumerate(value):
            found += problems(document, schema.get("items", {}), item, f"{where}[{i}]")
    if kind == "object":
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for name in schema.get("required", []):
            if name not in value:
                found.append(f"{where}: lacks the required {name}")
        for name, item in value.items():
            if name in properties:
                found += problems(document, properties[name], item, f"{where}.{name}")
            elif extra is False:
                found.append(f"{where}.{name}: not in the schema, which allows no other fields")
            elif isinstance(extra, dict):
                found += problems(document, extra, item, f"{where}.{name}")
    return found


def _is(kind: str, value: Any) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, {"string": str, "boolean": bool, "object": dict, "array": list}[kind])


def openapi_path(rule: str) -> str:
    """A Flask rule as the document writes its path: `/v1/runs/<run_id>` -> `/v1/runs/{runId}`."""
    def name(match: re.Match) -> str:
        head, *rest = match.group(1).split("_")
        return "{" + head + "".join(part.capitalize() for part in rest) + "}"

    return re.sub(r"<(?:[a-z_]+:)?([a-z_]+)>", name, rule)
