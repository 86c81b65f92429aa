"""The provider protocol: what an LLM back-end plugin implements, and the request it receives."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from crab._contracts.events import StreamEvent
from crab._contracts.messages import Message
from crab._contracts.tools import ToolSpec


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What crab knows about one model. Prices are US dollars per million tokens.

    ``vision`` is whether it reads images: None when unknown (images are sent and the server
    decides), False when the provider knows it does not (a request with images is refused with
    one line before it is sent).
    """

    id: str
    provider: str
    context_window: int | None = None
    max_output_tokens: int | None = None
    input_price: float | None = None
    output_price: float | None = None
    cache_read_price: float | None = None
    cache_write_price: float | None = None
    vision: bool | None = None


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One model call: system prompt, replayable history, tools, and sampling options.

    ``messages`` never holds aborted or failed assistant messages, and every tool call in it has
    exactly one result: the loop repairs history before it builds a request.

    ``session_id`` is the id of the conversation the call belongs to (the loop fills it for every
    call it makes: a turn's, a compaction's summary, a plugin's ``AgentHandle.complete``; "" when
    none). It is stable for the life of a session, across processes, so a provider may key its
    prompt cache by it (hashed: an id is not sent as it is) or remember a choice per session.

    ``options["output_schema"]`` (a typed library run, ``output_type=``) is ``{"name", "schema"}``:
    a provider whose ``structured_output`` attribute is True sends the JSON schema in its own
    response-format field, so the answer is JSON text matching it (the tools and system prompt stay
    as they were: the request prefix does not change). Other providers ignore it: crab then puts
    the schema in the prompt and checks the answer alike.
    """

    model: str
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int | None = None
    temperature: float | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    session_id: str = ""


@runtime_checkable
class Provider(Protocol):
    """An LLM back-end. Construction must be cheap and import nothing heavy.

    ``stream`` yields ``StreamEvent``s and ends with exactly one ``MessageEnd`` (success) or one
    ``ErrorEvent`` (failure; partial tool calls are then never run). It may raise
    ``crab._contracts.errors.ProviderError`` instead of yielding an ``ErrorEvent``; the loop treats both alike.
    Retries happen inside ``stream`` and are reported as ``RetryEvent``s.

    Optional attribute: ``structured_output`` (True: ``options["output_schema"]`` is honoured).
    Optional method: ``thinks(model) -> bool``, whether ``options["thinking"]`` (``"off"``…``"high"``)
    reaches ``model`` (mapped to the provider's own control); without it, or False, crab names the
    provider once and sends no level.

    Optional method: ``forced_tools(request) -> Collection[str]``, the names of the tools of
    ``request.tools`` this provider will make the model call (a ``tool_choice`` it sends, from its
    config or its own; every name for "call any tool"). The loop sends those tools with their full
    schemas, never as the progressive view's stubs. Without it, nothing is forced.
    """

    name: str

    def models(self) -> list[ModelInfo]:
        """Models this provider knows or has configured (for ``crab models``)."""
        ...

    def check(self, model: str) -> None:
        """Raise ``crab._contracts.errors.ConfigError`` when a call to ``model`` cannot work (missing key…).

        Called before the first request of a run, so a missing key stops the run at once.
        """
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Send ``request`` and yield what the model streams back."""
        ...
