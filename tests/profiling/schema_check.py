"""A small JSON Schema checker for the keywords our schemas use (draft-07 subset).

type, required, properties, additionalProperties (false), items, enum, const, minimum, and
`$ref` to `#/definitions/NAME`. Returns the list of violations, each with its JSON path.
"""

from __future__ import annotations

from typing import Any

_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}


def violations(value: Any, schema: dict[str, Any], root: dict[str, Any] | None = None, path: str = "$") -> list[str]:
    """Everything in `value` that breaks `schema`."""
    root = root if root is not None else schema
    if "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/definitions/"), f"unsupported $ref {ref}"
        return violations(value, root["definitions"][ref.removeprefix("#/definitions/")], root, path)
    out: list[str] = []
    if "type" in schema and not _TYPES[schema["type"]](value):
        return [f"{path}: expected {schema['type']}, got {type(value).__name__}"]
    if "const" in schema and value != schema["const"]:
        out.append(f"{path}: expected {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{path}: {value!r} not one of {schema['enum']}")
    if "minimum" in schema and _TYPES["number"](value) and value < schema["minimum"]:
        out.append(f"{path}: {value} < {schema['minimum']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        out += [f"{path}: missing {key!r}" for key in schema.get("required", []) if key not in value]
        for key, item in value.items():
            if key in props:
                out += violations(item, props[key], root, f"{path}.{key}")
            elif schema.get("additionalProperties") is False:
                out.append(f"{path}: unexpected {key!r}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            out += violations(item, schema["items"], root, f"{path}[{i}]")
    return out
