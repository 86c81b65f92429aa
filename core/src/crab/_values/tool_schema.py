"""JSON schema from Python type hints and docstrings, and the validator for those schemas (one
readable line per problem)."""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union, get_args, get_origin

_PRIMITIVES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


class SchemaError(TypeError):
    """A tool function uses a type hint that cannot become a JSON schema."""


def hint_to_schema(hint: Any) -> dict[str, Any]:
    """The JSON schema for one type hint; raises ``SchemaError`` for unsupported hints.

    Supported: str, int, float, bool, list[X], dict[str, X], Literal[...], X | None,
    Annotated[X, "description"], TypedDict, and Any; ``validate`` checks the same subset (type,
    enum, items, properties, required, additionalProperties).
    """
    if hint is Any or hint is inspect.Parameter.empty:
        return {}
    origin = get_origin(hint)
    if origin is typing.Annotated:
        base, *extras = get_args(hint)
        schema = hint_to_schema(base)
        for extra in extras:
            if isinstance(extra, str):
                schema["description"] = extra
        return schema
    if hint in _PRIMITIVES:
        return {"type": _PRIMITIVES[hint]}
    if hint is type(None):
        return {"type": "null"}
    if origin is Literal:
        values = list(get_args(hint))
        kinds = {_PRIMITIVES.get(type(v)) for v in values}
        schema = {"enum": values}
        if len(kinds) == 1 and None not in kinds:
            schema["type"] = kinds.pop()
        return schema
    if origin in (Union, types.UnionType):
        members = [a for a in get_args(hint) if a is not type(None)]
        if len(members) == 1:
            return hint_to_schema(members[0])
        return {"anyOf": [hint_to_schema(m) for m in members]}
    if hint is list or origin is list:
        args = get_args(hint)
        return {"type": "array", "items": hint_to_schema(args[0])} if args else {"type": "array"}
    if hint is dict or origin is dict:
        args = get_args(hint)
        if args and args[0] is not str:
            raise SchemaError("dict keys must be str for a JSON object")
        schema = {"type": "object"}
        if len(args) == 2 and args[1] is not Any:
            schema["additionalProperties"] = hint_to_schema(args[1])
        return schema
    if typing.is_typeddict(hint):
        hints = typing.get_type_hints(hint, include_extras=True)
        required = sorted(getattr(hint, "__required_keys__", hints))
        return {
            "type": "object",
            "properties": {k: hint_to_schema(v) for k, v in hints.items()},
            "required": required,
            "additionalProperties": False,
        }
    raise SchemaError(f"unsupported type hint {hint!r}")


_GOOGLE_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:\s*$")
_OTHER_SECTION = re.compile(r"^\s*(Returns?|Raises|Yields|Examples?|Notes?)\s*:\s*$")
_GOOGLE_PARAM = re.compile(r"^\s+(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_PARAM = re.compile(r"^\s*:param\s+(?:[\w\[\], |]+\s+)?(\w+)\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into (description, {parameter: description}).

    Understands Google style (``Args:`` sections) and Sphinx style (``:param name:``).
    """
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    current: str | None = None
    in_args = False
    for line in lines:
        if _GOOGLE_SECTION.match(line):
            in_args, current = True, None
            continue
        if _OTHER_SECTION.match(line):
            in_args, current = False, None
            continue
        sphinx = _SPHINX_PARAM.match(line)
        if sphinx:
            current = sphinx.group(1)
            params[current] = sphinx.group(2).strip()
            continue
        if line.lstrip().startswith(":"):
            current = None
            continue
        if in_args:
            google = _GOOGLE_PARAM.match("    " + line if not line.startswith(" ") else line)
            indent = len(line) - len(line.lstrip())
            if google and indent <= 4 and not (current and indent > 4):
                current = google.group(1).lstrip("*")
                params[current] = google.group(2).strip()
            elif current and line.strip():
                params[current] = f"{params[current]} {line.strip()}".strip()
            elif not line.strip():
                current = None
            continue
        if current and line.strip() and line.startswith(" "):
            params[current] = f"{params[current]} {line.strip()}".strip()
            continue
        current = None
        description.append(line)
    return "\n".join(description).strip(), params


def function_schema(fn: Callable[..., Any], skip: Callable[[str, Any], bool]) -> tuple[dict[str, Any], str]:
    """The object schema for ``fn``'s parameters and its description from the docstring.

    ``skip(name, hint)`` names parameters that are injected (like the tool context) rather than
    sent by the model.
    """
    hints = typing.get_type_hints(fn, include_extras=True)
    description, param_docs = parse_docstring(fn.__doc__)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise SchemaError(f"tool function {fn.__name__} may not take *args or **kwargs")
        hint = hints.get(name, Any)
        if skip(name, hint):
            continue
        try:
            schema = hint_to_schema(hint)
        except SchemaError as exc:
            raise SchemaError(f"parameter {name!r} of {fn.__name__}: {exc}") from None
        if name in param_docs and "description" not in schema:
            schema["description"] = param_docs[name]
        if param.default is param.empty:
            required.append(name)
        elif param.default is not None:
            schema["default"] = param.default
        properties[name] = schema
    return (
        {"type": "object", "properties": properties, "required": required, "additionalProperties": False},
        description,
    )


_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _json_type_name(value: Any) -> str:
    for name in ("boolean", "integer", "number", "string", "array", "object", "null"):
        if _JSON_TYPES[name](value):
            return name
    return type(value).__name__


def validate(value: Any, schema: Mapping[str, Any], where: str = "arguments") -> str | None:
    """Check ``value`` against ``schema``; return one line naming the first problem, or None."""
    if "anyOf" in schema:
        if all(validate(value, option, where) for option in schema["anyOf"]):
            kinds = ", ".join(str(o.get("type", "value")) for o in schema["anyOf"])
            return f"{where}: expected one of {kinds}, got {_json_type_name(value)}"
        return None
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(repr(v) for v in schema["enum"])
        return f"{where}: {value!r} is not one of {allowed}"
    kind = schema.get("type")
    if isinstance(kind, str) and kind in _JSON_TYPES and not _JSON_TYPES[kind](value):
        return f"{where}: expected {kind}, got {_json_type_name(value)}"
    if kind == "array" and "items" in schema:
        for i, item in enumerate(value):
            problem = validate(item, schema["items"], f"{where}[{i}]")
            if problem:
                return problem
    if kind == "object" and isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties", {})
        for name in schema.get("required", ()):
            if name not in value:
                return f"{where}: missing required {name!r}"
        extra = schema.get("additionalProperties", True)
        optional = set(properties) - set(schema.get("required", ()))
        for name, item in value.items():
            if item is None and name in optional:
                continue
            if name in properties:
                problem = validate(item, properties[name], f"{name}" if where == "arguments" else f"{where}.{name}")
            elif extra is False:
                expected = ", ".join(properties) or "none"
                return f"{where}: unknown {name!r} (expected: {expected})"
            elif isinstance(extra, Mapping):
                problem = validate(item, extra, f"{where}.{name}")
            else:
                problem = None
            if problem:
                return problem
    return None
