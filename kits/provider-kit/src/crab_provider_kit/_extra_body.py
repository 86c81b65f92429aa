"""``extra_body``: request fields a server needs that a provider does not send on its own
(``tool_choice``, ``top_k``, ``min_p``, ``repeat_penalty``, ``chat_template_kwargs``…), read from a
provider's table and a model's table and merged into the request body.

The fields a provider builds from the conversation (its ``reserved`` fields) cannot be set here:
a config error says so rather than letting a table silently replace the messages or turn
streaming off. Any other field replaces what the provider would send: the user wrote it. The
values are trust-only (``crab_provider_kit.extra_body_paths``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from crab import InvalidValue

if TYPE_CHECKING:
    from crab import ModelInfo

KEY = "extra_body"
_JSON = "a string, number, boolean, array or table (it is sent as JSON)"


@dataclass(frozen=True, slots=True)
class ExtraBody:
    """One provider's ``extra_body`` rules: the fields it owns, and those only about tools."""

    reserved: tuple[str, ...]
    """Body fields the provider builds itself; setting one is a config error."""
    tool_fields: tuple[str, ...] = ()
    """Fields about tools, left out of a request that offers none (the loop's last, tool-less
    call): servers reject them there."""

    def read(self, value: Any, key: Sequence[str]) -> dict[str, Any]:
        """A checked copy of an ``extra_body`` table; ``key`` is its path (``plugins``, …, ``extra_body``)."""
        if not isinstance(value, Mapping):
            raise InvalidValue(key, "a table of request fields, like { top_k = 20 }", value)
        for name, item in value.items():
            if name in self.reserved:
                expected = f"a field other than {', '.join(self.reserved)} (crab builds those itself)"
                raise InvalidValue((*key, name), expected, item)
            _check_json(item, (*key, name))
        return {str(k): v for k, v in value.items()}

    def split_model_entry(self, entry: Any, key: Sequence[str]) -> tuple[Any, dict[str, Any]]:
        """A ``models."<id>"`` entry (at ``key``) without its ``extra_body``, and that ``extra_body`` checked."""
        if not isinstance(entry, Mapping) or KEY not in entry:
            return entry, {}
        rest = {k: v for k, v in entry.items() if k != KEY}
        return rest, self.read(entry[KEY], (*key, KEY))

    def models(
        self, table: Any, known: Mapping[str, ModelInfo], *, provider: str, where: Sequence[str]
    ) -> tuple[dict[str, ModelInfo], dict[str, dict[str, Any]]]:
        """A provider's ``models`` table (at ``where``) over its ``known`` models: every model's
        ``ModelInfo`` and, for those that set one, its checked ``extra_body``."""
        from crab_provider_kit._models import model_from_table

        if not isinstance(table, Mapping):
            raise InvalidValue(where, "a table of model id to settings", table)
        models = dict(known)
        extra_bodies: dict[str, dict[str, Any]] = {}
        for model_id, entry in table.items():
            rest, extra = self.split_model_entry(entry, (*where, str(model_id)))
            if extra:
                extra_bodies[str(model_id)] = extra
            models[model_id] = model_from_table(
                str(model_id), rest, models.get(model_id), provider=provider, where=where
            )
        return models, extra_bodies

    def for_request(self, extra: Mapping[str, Any], has_tools: bool) -> dict[str, Any]:
        """The ``extra_body`` fields that fit one request."""
        return {k: v for k, v in extra.items() if has_tools or k not in self.tool_fields}

    def forced_tools(self, extra: Mapping[str, Any], tools: Sequence[str]) -> frozenset[str]:
        """The names of ``tools`` a ``tool_choice`` in ``extra`` makes the model call (a provider's
        ``forced_tools``): the one it names, every one for "call some tool", none otherwise.

        Both wire shapes: chat completions' ``"required"`` and ``{"type": "function", "function":
        {"name": ...}}``, Anthropic's ``{"type": "any"}`` and ``{"type": "tool", "name": ...}``.
        """
        if not tools or "tool_choice" not in self.tool_fields:
            return frozenset()
        choice = extra.get("tool_choice")
        if choice == "required" or (isinstance(choice, Mapping) and choice.get("type") == "any"):
            return frozenset(tools)
        if not isinstance(choice, Mapping):
            return frozenset()
        function = choice.get("function")
        name = function.get("name") if isinstance(function, Mapping) else choice.get("name")
        return frozenset({name}) if isinstance(name, str) and name in tools else frozenset()


def _check_json(value: Any, key: Sequence[str]) -> None:
    """TOML can hold dates and infinities, which JSON cannot: refuse them here, not mid-request."""
    if isinstance(value, bool | int | str):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidValue(key, "a finite number", value)
        return
    if isinstance(value, list):
        for n, item in enumerate(value):
            _check_json(item, (*key, str(n)))
        return
    if isinstance(value, Mapping):
        for name, item in value.items():
            _check_json(item, (*key, str(name)))
        return
    raise InvalidValue(key, _JSON, value)


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
