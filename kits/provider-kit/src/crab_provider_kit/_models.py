"""A provider's per-model config entries (``models."<id>"``) read into ``crab.ModelInfo``.

Only provider plugins have such tables, so this lives in their kit, not in core (it was
``crab.provider_kit.model_from_table`` before the kit).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from crab import InvalidValue, ModelInfo

MODEL_SETTINGS: dict[str, type] = {
    "context_window": int,
    "max_output_tokens": int,
    "input_price": float,
    "output_price": float,
    "cache_read_price": float,
    "cache_write_price": float,
}
"""The keys a provider's ``models."<id>"`` config table may set, and their types."""


def model_from_table(
    model_id: str, table: Any, base: ModelInfo | None, *, provider: str, where: Sequence[str]
) -> ModelInfo:
    """One ``models."<id>"`` config entry as ``ModelInfo``; fields it leaves out keep ``base``'s values.

    ``where`` is the key path of the models table (``("plugins", "provider-openai", "models")``).
    Unknown keys and wrong types raise ``crab.InvalidValue`` (one line), so a typo never silently
    does nothing.
    """
    if not isinstance(table, Mapping):
        raise InvalidValue((*where, model_id), "a table like { context_window = 128000 }", table)
    changes: dict[str, Any] = {}
    for key, value in table.items():
        kind = MODEL_SETTINGS.get(key)
        if kind is None:
            raise InvalidValue((*where, model_id, key), f"a model setting ({', '.join(MODEL_SETTINGS)})", value)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise InvalidValue((*where, model_id, key), "a number >= 0", value)
        changes[key] = kind(value)
    return replace(base or ModelInfo(id=model_id, provider=provider), **changes)
