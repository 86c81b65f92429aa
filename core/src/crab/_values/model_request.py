"""A model request and reply as values: the full schema of each tool a provider forces the model
to call (a forced call cannot be preceded by a hint that expands it), a reply's call ids made
unique (results pair with calls by id) and what a provider streamed before an abort or
failure (``Partial``). The call itself, and the ``model_call`` entry that records it, are the loop's
(``crab._loop.model_call``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from crab._contracts.messages import AssistantMessage, Thinking
from crab._contracts.providers import ModelRequest, Provider
from crab._contracts.tools import Tool
from crab._values.message_json import unique_id

Purpose = Literal["turn", "compaction", "plugin"]
"""Why a call is made: a turn's request, a compaction's summary, or a plugin's ``AgentHandle.complete``."""


def unique_call_ids(message: AssistantMessage) -> AssistantMessage:
    """``message`` with a call id repeated by the provider renamed (``id_2``…), in order, the way
    its forwarded ``ToolCallEvent``s were: results pair with calls by id, so every call needs its own."""
    taken: set[str] = set()
    calls = tuple(replace(call, id=unique_id(call.id, taken)) for call in message.tool_calls)
    return message if calls == message.tool_calls else replace(message, tool_calls=calls)


def forced_tools(provider: Provider, request: ModelRequest) -> frozenset[str]:
    """The tools ``provider`` makes the model call for ``request`` (its optional ``forced_tools``,
    e.g. a configured ``tool_choice``); empty for a provider without it."""
    forced = getattr(provider, "forced_tools", None)
    return frozenset(forced(request)) if callable(forced) else frozenset()


def with_forced_schemas(request: ModelRequest, provider: Provider, tools: Mapping[str, Tool]) -> ModelRequest:
    """``request`` with the full registered schema of every tool the provider forces."""
    forced = forced_tools(provider, request)
    if not forced:
        return request
    specs = []
    for spec in request.tools:
        tool = tools.get(spec.name) if spec.name in forced else None
        specs.append(tool.spec() if tool is not None and spec.parameters != tool.parameters else spec)
    return replace(request, tools=tuple(specs))


@dataclass
class Partial:
    """What a provider has streamed so far, kept so an abort can record it."""

    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    """Ids of the calls shown (a ``ToolCallEvent`` each), in order."""

    @property
    def empty(self) -> bool:
        """Nothing was streamed yet (so a retry repeats nothing the user saw)."""
        return not self.text and not self.thinking and not self.calls

    def message(self, stop: str, error: str | None, provider: str, model: str) -> AssistantMessage:
        thinking = (Thinking("".join(self.thinking)),) if self.thinking else ()
        return AssistantMessage(
            content="".join(self.text),
            thinking=thinking,
            stop_reason="aborted" if stop == "aborted" else "error",
            error=error,
            provider=provider,
            model=model,
        )
