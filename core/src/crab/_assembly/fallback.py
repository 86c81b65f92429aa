"""Model fallback: several ``provider/model`` choices acting as one provider. A request the current
model fails in a way its provider's retries cannot cure (auth, overloaded or a server error after
the retries, a context too long for it) goes, unchanged, to the next model, before anything of the
reply was streamed; the switch is a ``RetryEvent`` and the reply records the model that answered."""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Sequence
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from crab._contracts.errors import ConfigError, ProviderError
from crab._contracts.events import (
    ErrorEvent,
    MessageEnd,
    RetryEvent,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
)
from crab._contracts.messages import AssistantMessage
from crab._contracts.providers import ModelInfo, ModelRequest, Provider
from crab._values.pricing import with_cost

if TYPE_CHECKING:
    from crab._contracts.config import Config
    from crab._host.plugin_host import PluginHost

SWITCHING: frozenset[str] = frozenset({"auth", "overloaded", "server", "context_overflow"})
"""The error kinds another model may cure (a provider retries the rest, or they are the request's own)."""

SWITCHED = "{failed} failed ({kind}: {reason}); the same request goes to {next}"
"""The ``RetryEvent`` reason of a switch."""


def split_models(value: str | Sequence[str] | None) -> list[str]:
    """The models a model setting names: a list, or one string of comma-separated ``provider/model``s."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    models = [str(item).strip() for item in items]
    if any(not model for model in models):
        raise ConfigError(f"model {value!r} names an empty model: write provider/model, provider/model")
    return models


@dataclass(frozen=True, slots=True)
class Choice:
    """One model of a fallback chain: its provider and the model id there."""

    provider: Provider
    model: str

    @property
    def label(self) -> str:
        return f"{self.provider.name}/{self.model}"

    def info(self) -> ModelInfo | None:
        return next((m for m in self.provider.models() if m.id == self.model), None)


class FallbackProvider:
    """The first choice's provider (its name, models and checks) that hands a request the current
    choice failed on to the next one. The loop sees one provider and the first model; each reply
    names the provider and model that gave it (``AssistantMessage.provider``/``model``, recorded in
    the session and its ``model_call`` entries) and is priced at that model's prices."""

    def __init__(self, choices: Sequence[Choice]) -> None:
        if len(choices) < 2:
            raise ValueError("a fallback needs two models or more")
        self.choices = tuple(choices)
        self.name = choices[0].provider.name
        # A schema goes in the request's own field only when every model of the chain reads it there.
        self.structured_output = all(getattr(c.provider, "structured_output", False) for c in choices)

    def models(self) -> list[ModelInfo]:
        return self.choices[0].provider.models()

    def check(self, model: str) -> None:
        """Every model of the chain must be usable (a fallback with no key fails at once, not when needed)."""
        for index, choice in enumerate(self.choices):
            choice.provider.check(model if index == 0 else choice.model)

    def forced_tools(self, request: ModelRequest) -> Collection[str]:
        forced = getattr(self.choices[0].provider, "forced_tools", None)
        return forced(request) if callable(forced) else ()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        last = len(self.choices) - 1
        for index, choice in enumerate(self.choices):
            sent = request if index == 0 else replace(request, model=choice.model)
            failure: tuple[str, str] | None = None
            streamed = False
            try:
                async with aclosing(choice.provider.stream(sent)) as stream:  # type: ignore[type-var]
                    async for event in stream:
                        if isinstance(event, ErrorEvent) and index < last and not streamed and event.kind in SWITCHING:
                            failure = (event.kind, event.message)
                            break
                        if isinstance(event, TextDelta | ThinkingDelta | ToolCallEvent):
                            streamed = True
                        if isinstance(event, MessageEnd) and index > 0:
                            event = MessageEnd(self._answered(event, choice))
                        yield event
            except ProviderError as exc:
                if index == last or streamed or exc.kind not in SWITCHING:
                    raise
                failure = (exc.kind, str(exc))
            if failure is None:
                return
            following = self.choices[index + 1]
            reason = SWITCHED.format(failed=choice.label, kind=failure[0], reason=failure[1], next=following.label)
            yield RetryEvent(attempt=index + 1, max_attempts=last, delay=0.0, reason=reason)

    @staticmethod
    def _answered(event: MessageEnd, choice: Choice) -> AssistantMessage:
        message = event.message
        usage = with_cost(message.usage, choice.info()) if message.usage is not None else None
        return replace(
            message, usage=usage, provider=message.provider or choice.provider.name, model=message.model or choice.model
        )


def choose_models(
    host: PluginHost, config: Config, provider: str | None, model: str | Sequence[str] | None
) -> tuple[Provider, str]:
    """``choose_provider`` for a model setting that may name several models (``models=[...]``,
    ``--model a/x,b/y``, ``[crab] model = ["a/x", "b/y"]`` or ``"a/x, b/y"``): one is chosen as
    before, several become a ``FallbackProvider`` (each checked now: a fallback that cannot work is
    a setup error). A checked config holds a list as the comma-separated string (``core_tables.ModelSetting``)."""
    from crab._assembly.choosing import choose_provider

    wanted = split_models(model) if model is not None else []
    if not wanted:
        configured = config.get("crab.model")
        several = isinstance(configured, list) or (isinstance(configured, str) and "," in configured)
        wanted = split_models(configured) if several else []
    if len(wanted) < 2:
        return choose_provider(host, config, provider, wanted[0] if wanted else None)
    first = Choice(*choose_provider(host, config, provider, wanted[0]))
    rest = [Choice(*choose_provider(host, config, None, name)) for name in wanted[1:]]
    return FallbackProvider([first, *rest]), first.model
