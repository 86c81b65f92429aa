"""A provider's per-model config entries (``models."<id>"``) read into ``crab.ModelInfo``.

Only provider plugins have such tables, so this lives in their kit, not in core (it was
``crab.provider_kit.model_from_table`` before the kit).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from crab import InvalidValue, ModelInfo, ModelRequest, ProviderError

MODEL_SETTINGS: dict[str, type] = {
    "context_window": int,
    "max_output_tokens": int,
    "input_price": float,
    "output_price": float,
    "cache_read_price": float,
    "cache_write_price": float,
    "vision": bool,
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
        if kind is bool:
            if not isinstance(value, bool):
                raise InvalidValue((*where, model_id, key), "true or false", value)
            changes[key] = value
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise InvalidValue((*where, model_id, key), "a number >= 0", value)
        changes[key] = kind(value)
    return replace(base or ModelInfo(id=model_id, provider=provider), **changes)


def refuse_images_without_vision(request: ModelRequest, info: ModelInfo | None, table: str) -> None:
    """Raise a one-line ``ProviderError`` when ``request`` holds images and ``info`` says the model
    reads none (``vision = false``), so the user sees why instead of the server's HTTP 400.

    ``table`` is the provider's config table (``provider-openai``), named in the message.
    """
    if info is None or info.vision is not False:
        return
    if any(getattr(message, "images", ()) for message in request.messages):
        raise ProviderError(
            f'model {request.model} does not read images ([plugins.{table}] models."{request.model}".vision = '
            "false): switch to a vision model (-m) or continue in a session without images",
            "invalid_request",
        )
