"""Typed results of a library run (``output_type=``): the JSON schema a Python type (or a schema
dict) stands for, the check of a model's answer against it with one line naming the field, the
typed value built from a valid answer, and the partial value of an answer still streaming.

pydantic is imported only for a type that is (or contains) a pydantic model, which means the
program imported it already; dataclasses, TypedDicts, lists, unions and schema dicts need nothing."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union, get_args, get_origin

from crab._contracts.errors import CrabError
from crab._host.hookspecs import hookimpl
from crab._values.message_json import deeper_than
from crab._values.tool_schema import SchemaError, hint_to_schema, validate

if TYPE_CHECKING:
    from crab._contracts.images import ImagePart
    from crab._contracts.providers import ModelRequest
    from crab._loop.agent import Agent as LoopAgent
    from crab._loop.session import Session, TurnOutcome

WRAP_KEY = "result"
"""The one property of the object a non-object answer is wrapped in: OpenAI's and Anthropic's
structured output take an object at the root, so a ``list[...]`` or a union travels inside one."""

PROMPTED = (
    "[crab] Answer with only a JSON value (no prose around it, no code fence) that matches this JSON schema: {schema}"
)
"""Added to the prompt of a typed run when the provider has no structured output of its own."""
RETRY = (
    "[crab] Your answer does not match the required JSON schema: {reason}. Answer again with only the "
    "corrected JSON value."
)
"""The follow-up a run sends when an answer does not validate (at most ``output_retries`` times)."""
MAX_DEPTH = 100
"""Nesting allowed in an answer: the check, ``build`` and pydantic walk it recursively, and a model's
answer deeper than Python's recursion limit must be an answer that does not fit, not a crash."""
TOO_DEEP = f"the answer is nested more than {MAX_DEPTH} levels deep; answer with a flatter JSON value"


class OutputError(CrabError):
    """The model's answer did not match the run's ``output_type``, after every retry.

    ``field`` names the first field that was wrong (``"items[2].price"``; ``""`` when the answer
    was not JSON at all), ``reason`` says what was wrong with it, ``text`` is the last answer,
    ``attempts`` how many answers were checked.
    """

    result: Any = None
    """The run's ``crab.RunResult`` (usage, messages, session id): nothing of the run is lost."""

    def __init__(self, field: str, reason: str, text: str, attempts: int) -> None:
        where = f"field {field!r}: " if field else ""
        super().__init__(
            f"the answer does not match the output type after {attempts} attempt(s): {where}{reason} "
            "(give the model more retries with output_retries=, or loosen the type)"
        )
        self.field = field
        self.reason = reason
        self.text = text
        self.attempts = attempts


class Invalid(ValueError):
    """One answer that failed the check: ``field`` and ``reason`` (what goes back to the model)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}" if field else reason)
        self.field = field
        self.reason = reason


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """What a typed run asks for: the JSON ``schema`` sent (wrapped in an object under ``WRAP_KEY``
    when ``wrapped``), its ``name``, and the Python type answers become (None for a schema dict)."""

    schema: dict[str, Any]
    name: str
    target: Any = None
    wrapped: bool = False
    pydantic: bool = False

    def option(self) -> dict[str, Any]:
        """``ModelRequest.options["output_schema"]``: what a provider with structured output sends."""
        return {"name": self.name, "schema": self.schema}

    def check(self, text: str) -> Any:
        """The typed value of the answer ``text``; ``Invalid`` naming the field when it does not fit."""
        try:
            value = json.loads(unfenced(text))
        except ValueError as exc:
            raise Invalid("", f"the answer is not JSON ({exc})") from None
        except RecursionError:  # the model's JSON nests deeper than Python's recursion limit
            raise Invalid("", TOO_DEEP) from None
        if deeper_than(value, MAX_DEPTH):  # validating and building it would recurse as deep
            raise Invalid("", TOO_DEEP)
        if self.wrapped:
            if not isinstance(value, dict) or WRAP_KEY not in value:
                raise Invalid("", f"expected a JSON object with the key {WRAP_KEY!r}")
            value = value[WRAP_KEY]
        if self.pydantic:
            return _pydantic_value(self.target, value)
        inner = self.schema["properties"][WRAP_KEY] if self.wrapped else self.schema
        problem = validate(value, inner, "arguments")
        if problem is not None:
            raise _invalid(problem)
        return value if self.target is None else build(self.target, value)

    def partial(self, text: str) -> Any:
        """The value of an answer still streaming (unvalidated JSON: dicts, lists), or None."""
        value = partial_json(text)
        if self.wrapped:
            return value.get(WRAP_KEY) if isinstance(value, dict) else None
        return value


def output_spec(output_type: Any) -> OutputSpec:
    """The ``OutputSpec`` for a run's ``output_type``; ``UsageError`` for a type crab cannot describe.
    A type's spec is made once (a program passes the same type run after run)."""
    if isinstance(output_type, Mapping):
        return _spec(output_type)
    try:
        return _type_spec(output_type)
    except TypeError:  # unhashable: described each time
        return _spec(output_type)


@functools.lru_cache(maxsize=128)
def _type_spec(output_type: Any) -> OutputSpec:
    return _spec(output_type)


@functools.lru_cache(maxsize=256)
def _hints(cls: Any) -> dict[str, Any]:
    """A dataclass's or TypedDict's field hints (evaluating string annotations compiles them: once)."""
    return typing.get_type_hints(cls, include_extras=True)


def _spec(output_type: Any) -> OutputSpec:
    from crab._contracts.errors import UsageError

    if isinstance(output_type, Mapping):
        schema = dict(output_type)
        name = str(schema.get("title") or "answer")
        return _wrapped(schema, name, None, pydantic=False)
    try:
        if _uses_pydantic(output_type):
            from pydantic import TypeAdapter

            schema = TypeAdapter(output_type).json_schema()
            return _wrapped(schema, _name(output_type), output_type, pydantic=True)
        return _wrapped(type_schema(output_type), _name(output_type), output_type, pydantic=False)
    except (SchemaError, TypeError, NameError) as exc:
        raise UsageError(f"output_type {output_type!r} cannot be described as JSON: {exc}") from None


def _wrapped(schema: dict[str, Any], name: str, target: Any, *, pydantic: bool) -> OutputSpec:
    name = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "answer"
    if schema.get("type") == "object":
        return OutputSpec(schema, name, target, False, pydantic)
    outer: dict[str, Any] = {
        "type": "object",
        "properties": {WRAP_KEY: schema},
        "required": [WRAP_KEY],
        "additionalProperties": False,
    }
    defs = schema.pop("$defs", None)  # pydantic's references stay resolvable from the new root
    if defs is not None:
        outer["$defs"] = defs
    return OutputSpec(outer, name, target, True, pydantic)


def _name(hint: Any) -> str:
    name = getattr(hint, "__name__", None) if isinstance(hint, type) else None
    return name or "answer"


def type_schema(hint: Any) -> dict[str, Any]:
    """The JSON schema of a type hint: ``crab.tool``'s (primitives, Literal, TypedDict…) plus
    dataclasses, and lists, dicts and unions of any of them."""
    origin = get_origin(hint)
    if origin is typing.Annotated:
        base, *extras = get_args(hint)
        schema = type_schema(base)
        for extra in extras:
            if isinstance(extra, str):
                schema["description"] = extra
        return schema
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        hints = _hints(hint)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for item in dataclasses.fields(hint):
            if not item.init:
                continue
            properties[item.name] = type_schema(hints[item.name])
            if item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING:
                required.append(item.name)
        return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    if typing.is_typeddict(hint):
        hints = _hints(hint)
        return {
            "type": "object",
            "properties": {k: type_schema(v) for k, v in hints.items()},
            "required": sorted(getattr(hint, "__required_keys__", hints)),
            "additionalProperties": False,
        }
    if origin in (Union, types.UnionType):
        members = get_args(hint)
        if len(members) == 2 and type(None) in members:  # Optional[X]: X or null
            other = next(m for m in members if m is not type(None))
            return {"anyOf": [type_schema(other), {"type": "null"}]}
        return {"anyOf": [type_schema(m) for m in members]}
    if origin is list:
        (item_hint,) = get_args(hint) or (Any,)
        return {"type": "array", "items": type_schema(item_hint)}
    if origin is dict:
        args = get_args(hint)
        if args and args[0] is not str:
            raise SchemaError("dict keys must be str for a JSON object")
        return {"type": "object", "additionalProperties": type_schema(args[1])} if args else {"type": "object"}
    return hint_to_schema(hint)


def build(hint: Any, value: Any) -> Any:
    """``value`` (JSON already checked against ``type_schema(hint)``) as an instance of ``hint``."""
    origin = get_origin(hint)
    if origin is typing.Annotated:
        return build(get_args(hint)[0], value)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        hints = _hints(hint)
        names = {f.name for f in dataclasses.fields(hint) if f.init}
        return hint(**{k: build(hints[k], v) for k, v in value.items() if k in names})
    if typing.is_typeddict(hint):
        hints = _hints(hint)
        return {k: build(hints[k], v) if k in hints else v for k, v in value.items()}
    if origin in (Union, types.UnionType):
        for member in get_args(hint):
            if validate(value, type_schema(member)) is None:
                return build(member, value)
        return value
    if origin is list:
        (item_hint,) = get_args(hint) or (Any,)
        return [build(item_hint, item) for item in value]
    if origin is dict:
        args = get_args(hint)
        return {k: build(args[1], v) for k, v in value.items()} if args else value
    if hint is float and isinstance(value, int):
        return float(value)
    return value


def _uses_pydantic(hint: Any) -> bool:
    """Whether ``hint`` is or holds a pydantic model (pydantic is then loaded: the program made one)."""
    pydantic = sys.modules.get("pydantic")
    if pydantic is None:
        return False
    if isinstance(hint, type) and issubclass(hint, pydantic.BaseModel):
        return True
    return any(_uses_pydantic(arg) for arg in get_args(hint))


def _pydantic_value(target: Any, value: Any) -> Any:
    from pydantic import TypeAdapter, ValidationError

    try:
        return TypeAdapter(target).validate_python(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) if isinstance(part, str) else f"[{part}]" for part in first["loc"])
        raise Invalid(field.replace(".[", "["), str(first["msg"])) from None


_WHERE = re.compile(r"^(?P<where>[^:]*): (?P<reason>.*)$")
_MISSING = re.compile(r"^missing required '(?P<name>[^']*)'$")


def _invalid(problem: str) -> Invalid:
    """``Invalid`` from one of ``validate``'s lines (``"items[0].price: expected number, got string"``)."""
    match = _WHERE.match(problem)
    if match is None:
        return Invalid("", problem)
    where, reason = match.group("where"), match.group("reason")
    where = "" if where == "arguments" else where.removeprefix("arguments")
    missing = _MISSING.match(reason)
    if missing is not None:
        where = f"{where}.{missing.group('name')}" if where else missing.group("name")
    return Invalid(where, reason)


_FENCE = re.compile(r"^```[A-Za-z]*\s*\n?(?P<body>.*?)\n?```\s*$", re.DOTALL)


def unfenced(text: str) -> str:
    """``text`` without the Markdown code fence a model sometimes wraps JSON in."""
    stripped = text.strip()
    match = _FENCE.match(stripped)
    return match.group("body") if match else stripped


_TRIMS = 64
"""How many characters ``partial_json`` drops from the end, at most, looking for a value that closes."""


def partial_json(text: str) -> Any:
    """The JSON value ``text`` starts (an answer cut mid-stream), its open strings, arrays and
    objects closed; None when nothing parses yet. A half-written key, number or literal is left out."""
    body = text.strip()
    if body.startswith("```"):
        body = body.partition("\n")[2]
    body = body.removesuffix("```").rstrip()
    for end in range(len(body), max(0, len(body) - _TRIMS), -1):
        candidate = body[:end].rstrip().rstrip(",:").rstrip()
        closer = _closer(candidate)
        if closer is None:
            continue
        try:
            return json.loads(candidate + closer)
        except ValueError:
            continue
        except RecursionError:  # nested too deep: no partial value, as check() says at the end
            return None
    return None


def _closer(text: str) -> str | None:
    """The characters that close every string, array and object ``text`` leaves open."""
    stack: list[str] = []
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            stack.append("]" if char == "[" else "}")
        elif char in "]}":
            if not stack:
                return None
            stack.pop()
    if escaped:
        return None
    return ('"' if in_string else "") + "".join(reversed(stack))


def prompted(prompt: str, spec: OutputSpec, provider: object) -> str:
    """``prompt`` as a typed run sends it: as written when ``provider`` has structured output of its
    own (the schema goes in its field), else with the schema the answer must match after it."""
    if getattr(provider, "structured_output", False):
        return prompt
    schema = json.dumps(spec.schema, ensure_ascii=False, separators=(",", ":"))
    return f"{prompt}\n\n{PROMPTED.format(schema=schema)}"


def schema_file(path: str | Path) -> OutputSpec:
    """The ``OutputSpec`` of a JSON schema file (``crab run --output-schema FILE``); ``UsageError``
    saying what is wrong with it."""
    from crab._contracts.errors import UsageError

    try:
        schema = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"--output-schema: cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise UsageError(f"--output-schema: {path} is not JSON ({exc})") from None
    if not isinstance(schema, dict):
        raise UsageError(f"--output-schema: {path} must hold a JSON schema object, not {type(schema).__name__}")
    schema.setdefault("title", Path(path).stem)
    return output_spec(schema)


class OutputRoute:
    """A plugin object giving every model call the schema of a typed ``crab run`` (its one session)."""

    def __init__(self, spec: OutputSpec) -> None:
        self.spec = spec

    @hookimpl
    def crab_before_model_call(self, request: ModelRequest) -> ModelRequest:
        return replace(request, options={**request.options, "output_schema": self.spec.option()})


async def typed_turn(
    agent: LoopAgent, session: Session, text: str, spec: OutputSpec, retries: int, images: Sequence[ImagePart] = ()
) -> tuple[TurnOutcome, Any, OutputError | None]:
    """One input of a typed ``crab run``: its outcome, the answer's value, or the ``OutputError``
    after ``retries`` answers that did not fit went back to the model with the reason."""
    outcome = await agent.handle_input(session, prompted(text, spec, agent.provider), images=images)
    attempts = 1
    while outcome.stop == "end" and outcome.error is None:
        try:
            return outcome, spec.check(outcome.text), None
        except Invalid as exc:
            if attempts > retries:
                return outcome, None, OutputError(exc.field, exc.reason, outcome.text, attempts)
            attempts += 1
            outcome = await agent.handle_input(session, RETRY.format(reason=str(exc)))
    return outcome, None, None
