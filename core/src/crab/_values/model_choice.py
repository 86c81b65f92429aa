"""A provider and model as values: ``provider/model`` resolved against the loaded providers (what
``/model`` may name), and the ``event`` entry that records a switch, read back on resume. Which
model each live session talks to is the loop's (``crab._loop.model_choice``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from crab._contracts.errors import ConfigError
from crab._contracts.providers import ModelInfo, Provider
from crab._contracts.storage import Entry

SHOWN = 6
"""How many of a provider's models an error names."""
MODEL_EVENT = "model"
"""The ``kind`` of the event entry that records a model switch."""


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """One provider and model id, with what the provider says of the model (window, prices)."""

    provider: Provider
    model: str
    info: ModelInfo | None = None

    @property
    def name(self) -> str:
        """``provider/model``, as ``-m`` takes it."""
        return f"{self.provider.name}/{self.model}"


def listed_models(provider: Provider) -> list[ModelInfo]:
    """What ``provider`` lists; a provider that fails to list lists nothing (``crab models`` says why)."""
    try:
        return list(provider.models())
    except Exception:
        return []


def choice_of(provider: Provider, model: str) -> ModelChoice:
    """``provider``'s ``model``, with its ``ModelInfo`` when the provider lists it."""
    info = next((m for m in listed_models(provider) if m.id == model), None)
    return ModelChoice(provider, model, info)


def configured_models(providers: Mapping[str, Provider], *also: ModelChoice) -> list[str]:
    """Every choice ``/model`` offers, as ``provider/model``: ``also`` (the run's and the session's
    models) first, then what each loaded provider lists, without repeats."""
    names = [choice.name for choice in also]
    for provider in providers.values():
        names.extend(f"{provider.name}/{info.id}" for info in listed_models(provider))
    return list(dict.fromkeys(names))


def resolve(spec: str, providers: Mapping[str, Provider], current: ModelChoice, default: ModelChoice) -> ModelChoice:
    """The choice ``spec`` (``provider/model`` or a model of the current provider) names.

    ``ConfigError`` with one line saying what to do when the provider is not loaded, the model is
    not one it lists (nor the run's own), or the provider says a call to it cannot work.
    """
    spec = spec.strip()
    if spec in (default.name, current.name):  # the run's own and the session's, as `/model` lists them
        return default if spec == default.name else current
    prefix, slash, rest = spec.partition("/")
    if slash and prefix in providers:
        provider, model = providers[prefix], rest
    else:
        provider, model = current.provider, spec
    if not model:
        raise ConfigError(f"name a model of {provider.name}: /model {provider.name}/MODEL (`/model` lists them)")
    for known in (default, current):
        # By name: the run's provider object need not be the registry's (one endpoint, two objects).
        if known.provider.name == provider.name and known.model == model:
            return known
    listed = [info.id for info in listed_models(provider)]
    if model not in listed:
        if slash and prefix not in providers:
            raise ConfigError(
                f"no provider named {prefix!r} is loaded (loaded: {', '.join(sorted(providers))}); "
                "`/model` lists the configured models"
            )
        shown = ", ".join(listed[:SHOWN]) + (", …" if len(listed) > SHOWN else "") if listed else "none"
        raise ConfigError(
            f"{model!r} is not a configured model of {provider.name} ({provider.name} has: {shown}); `/model` "
            "lists every choice, and a model joins them in the provider's models table (docs/providers.md)"
        )
    provider.check(model)
    return choice_of(provider, model)


def model_entry(choice: ModelChoice) -> dict[str, Any]:
    """The event entry that records a switch to ``choice``."""
    return {"kind": MODEL_EVENT, "provider": choice.provider.name, "model": choice.model}


def stored_choice(entries: Iterable[Entry]) -> tuple[str, str] | None:
    """(provider, model) of the last switch recorded in ``entries`` (an ``event`` entry
    ``{"kind": "model", "provider": ..., "model": ...}``); None when there is none."""
    found: tuple[str, str] | None = None
    for entry in entries:
        payload = entry.payload
        if entry.type == "event" and payload.get("kind") == MODEL_EVENT:
            provider, model = payload.get("provider"), payload.get("model")
            if isinstance(provider, str) and isinstance(model, str):
                found = (provider, model)
    return found
