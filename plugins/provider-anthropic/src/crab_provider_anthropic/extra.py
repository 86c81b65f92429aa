"""``extra_body``: request fields a server needs that crab does not send on its own (``tool_choice``,
``top_k``, ``top_p``, ``metadata``…), read from the provider's table
and from a model's table, and merged into the Messages API body.

The fields crab builds from the conversation (``RESERVED``) cannot be set here: a config error
says so rather than letting a table silently replace the messages or turn streaming off. Any
other field replaces what crab would send (``temperature``, ``max_tokens``…): the user wrote it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from crab import InvalidValue

KEY = "extra_body"
RESERVED = ("model", "messages", "stream", "system", "tools")
"""Body fields crab builds from the conversation and the tools it offers."""

TOOL_FIELDS = ("tool_choice",)
"""Fields about tools, left out of a request that offers none (the loop's last, tool-less call):
servers reject them there."""

_JSON = "a string, number, boolean, array or table (it is sent as JSON)"


def invalid(key: Sequence[str], expected: str, found: Any) -> InvalidValue:
    """One bad value as one line: ``<file>: plugins.<table>.extra_body.<field>: expected …, found …``."""
    return InvalidValue(key, expected, found)


def for_request(extra: Mapping[str, Any], has_tools: bool) -> dict[str, Any]:
    """The ``extra_body`` fields that fit one request."""
    return {k: v for k, v in extra.items() if has_tools or k not in TOOL_FIELDS}


def read_extra_body(value: Any, key: Sequence[str]) -> dict[str, Any]:
    """A checked copy of an ``extra_body`` table; ``key`` is its path (``plugins``, …, ``extra_body``)."""
    if not isinstance(value, Mapping):
        raise invalid(key, "a table of request fields, like { top_k = 20 }", value)
    for name, item in value.items():
        if name in RESERVED:
            raise invalid((*key, name), f"a field other than {', '.join(RESERVED)} (crab builds those itself)", item)
        _check_json(item, (*key, name))
    return {str(k): v for k, v in value.items()}


def _check_json(value: Any, key: Sequence[str]) -> None:
    """TOML can hold dates and infinities, which JSON cannot: refuse them here, not mid-request."""
    if isinstance(value, bool | int | str):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise invalid(key, "a finite number", value)
        return
    if isinstance(value, list):
        for n, item in enumerate(value):
            _check_json(item, (*key, str(n)))
        return
    if isinstance(value, Mapping):
        for name, item in value.items():
            _check_json(item, (*key, str(name)))
        return
    raise invalid(key, _JSON, value)


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` laid on top: tables merge key by key, anything else is replaced."""
    out = dict(base)
    for key, value in over.items():
        below = out.get(key)
        if isinstance(below, Mapping) and isinstance(value, Mapping):
            out[key] = merge(below, value)
        else:
            out[key] = value
    return out


def split_model_entry(entry: Any, key: Sequence[str]) -> tuple[Any, dict[str, Any]]:
    """A ``models."<id>"`` entry (at ``key``) without its ``extra_body``, and that ``extra_body`` checked."""
    if not isinstance(entry, Mapping) or KEY not in entry:
        return entry, {}
    rest = {k: v for k, v in entry.items() if k != KEY}
    return rest, read_extra_body(entry[KEY], (*key, KEY))
