"""The one path every model call takes (a turn's, a compaction's summary, ``AgentHandle.complete``):
``ModelCalls.prepare`` dispatches ``crab_before_model_call``; ``send`` streams, prices usage once,
emits the one ``UsageEvent`` and records the ``model_call`` event."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import Any

from crab._contracts.errors import ProviderError
from crab._contracts.events import (
    ErrorEvent,
    ErrorKind,
    Event,
    MessageEnd,
    ModelCallEvent,
    RetryEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    UsageEvent,
)
from crab._contracts.messages import AssistantMessage
from crab._contracts.providers import ModelRequest
from crab._contracts.storage import EntryType
from crab._contracts.tools import Tool
from crab._host.dispatch import Dispatcher
from crab._loop.session import Session
from crab._values.message_json import unique_id, usage_to_dict
from crab._values.model_choice import ModelChoice
from crab._values.model_request import Partial, Purpose, unique_call_ids, with_forced_schemas
from crab._values.pricing import with_cost
from crab._values.utf8 import hash_bytes

AppendEntry = Callable[[Session, EntryType, Mapping[str, Any]], Awaitable[None]]
Emit = Callable[[Event, str], None]


@dataclass(frozen=True, slots=True)
class Reply:
    """One model call's outcome: the reply (``stop_reason="error"`` when it failed, with
    ``error_kind``), and the context-overflow error held back for the caller (``hold_overflow``)."""

    message: AssistantMessage
    overflow: ErrorEvent | None = None
    error_kind: ErrorKind | None = None


class ModelCalls:
    """Model calls for the sessions of one agent: its dispatcher, and the provider and model each
    session talks to (``choose``: the agent's, or the one ``/model`` chose for the session)."""

    def __init__(
        self,
        dispatch: Dispatcher,
        choose: Callable[[Session | None], ModelChoice],
        *,
        emit: Emit,
        append_entry: AppendEntry,
        redact: Callable[[str], str],
    ) -> None:
        self.dispatch = dispatch
        self.choose = choose
        self.emit = emit
        self.append_entry = append_entry
        self.redact = redact

    async def prepare(
        self, session: Session, request: ModelRequest, tools: Mapping[str, Tool] | None = None
    ) -> ModelRequest:
        """``request`` as the ``crab_before_model_call`` implementations leave it (the progressive
        tool view among them); ``ModelCallRefused`` when one fails. A tool of ``tools`` (the
        registry) that the provider will force the model to call goes with its full schema,
        whatever a hook made of it: a forced call cannot be preceded by a hint that expands it."""
        request = await self.dispatch.before_model_call(request, session.id)
        provider = self.choose(session).provider
        return with_forced_schemas(request, provider, tools) if tools and request.tools else request

    async def send(
        self,
        session: Session,
        request: ModelRequest,
        *,
        purpose: Purpose = "turn",
        partial: Partial | None = None,
        hold_overflow: bool = False,
        record_reply: Callable[[AssistantMessage], Awaitable[None]] | None = None,
        choice: ModelChoice | None = None,
    ) -> Reply:
        """Stream a prepared ``request`` and account for it.

        A turn's call (``purpose="turn"``) forwards the stream to renderers; a summary call
        forwards only retries and leaves its errors to the caller. ``partial`` collects what was
        streamed (an abort records it); ``record_reply`` stores the reply before the
        ``model_call`` event that describes it. With ``hold_overflow`` a context-overflow error
        before any output is returned in ``Reply.overflow`` instead of shown (the caller may
        compact and retry). ``choice`` is the provider and model the request was built for (default:
        the session's now), so a ``/model`` typed while a request is being prepared takes the next one.
        """
        choice = choice or self.choose(session)
        request = replace(request, session_id=session.id)  # providers key their prompt caches by it
        system_sha = hashlib.sha256(hash_bytes(request.system)).hexdigest()
        if system_sha not in session.system_hashes:
            entry = {"kind": "system_prompt", "sha256": system_sha, "text": request.system}
            await self.append_entry(session, "event", entry)
            session.system_hashes.add(system_sha)
        self.emit(ModelCallEvent(session.id, "start", choice.provider.name, choice.model, purpose), session.id)
        reply = await self._stream(session, request, purpose, partial or Partial(), hold_overflow, choice)
        message = reply.message
        usage = message.usage
        if usage is not None:
            usage = with_cost(usage, choice.info)
            message = replace(message, usage=usage)
            reply = replace(reply, message=message)
            self.emit(UsageEvent(usage), session.id)
        kind = reply.error_kind or ("context_overflow" if reply.overflow is not None else None)
        ended = ModelCallEvent(
            session.id,
            "end",
            choice.provider.name,
            choice.model,
            purpose,
            message.model,
            message.stop_reason,
            kind,
            usage,
        )
        self.emit(ended, session.id)
        if record_reply is not None:
            await record_reply(message)
        event: dict[str, Any] = {
            "kind": "model_call",
            "model": message.model or choice.model,
            "provider": message.provider or choice.provider.name,
            "system_sha256": system_sha,
            "stop_reason": message.stop_reason,
        }
        if purpose != "turn":
            event["purpose"] = purpose
        if usage is not None:
            event["usage"] = usage_to_dict(usage)
        if reply.overflow is not None:
            event["error_kind"] = "context_overflow"
        await self.append_entry(session, "event", event)
        return reply

    async def _stream(
        self,
        session: Session,
        request: ModelRequest,
        purpose: Purpose,
        partial: Partial,
        hold_overflow: bool,
        choice: ModelChoice,
    ) -> Reply:
        """The provider's reply; its own ``UsageEvent``s are not forwarded (usage is reported once)."""
        shown = purpose == "turn"
        held: ErrorEvent | None = None
        kind: ErrorKind | None = None
        provider, model = choice.provider.name, choice.model
        message: AssistantMessage | None = None
        taken: set[str] = set()  # call ids already shown: a repeated one is renamed, as in the message

        def show(event: Event) -> None:
            if shown or isinstance(event, RetryEvent):
                self.emit(event, session.id)

        try:
            async with aclosing(choice.provider.stream(request)) as stream:  # type: ignore[type-var]
                async for event in stream:
                    if isinstance(event, ToolCallEvent):
                        event = ToolCallEvent(replace(event.call, id=unique_id(event.call.id, taken)))
                        partial.calls.append(event.call.id)
                    elif isinstance(event, TextDelta):
                        partial.text.append(event.text)
                    elif isinstance(event, ThinkingDelta):
                        partial.thinking.append(event.text)
                    elif isinstance(event, UsageEvent):
                        continue
                    elif isinstance(event, ErrorEvent):
                        kind = event.kind
                        if hold_overflow and event.kind == "context_overflow" and partial.empty:
                            held = event
                        elif shown:
                            self.emit(event, session.id)
                        message = partial.message("error", event.message, provider, model)
                        break
                    elif isinstance(event, MessageEnd):
                        message = unique_call_ids(event.message)
                        break
                    show(event)
        except ProviderError as exc:
            kind = exc.kind
            if hold_overflow and exc.kind == "context_overflow" and partial.empty:
                held = ErrorEvent(str(exc), exc.kind)
            elif shown:
                self.emit(ErrorEvent(str(exc), exc.kind), session.id)
            message = partial.message("error", str(exc), provider, model)
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as exc:
            kind = "unknown"
            text = f"provider {provider} failed: {type(exc).__name__}: {exc}"
            if shown:
                self.emit(ErrorEvent(self.redact(text), "unknown"), session.id)
            message = partial.message("error", text, provider, model)
        if message is None:
            kind = "stream"
            text = f"provider {provider} ended its stream without a final message"
            if shown:
                self.emit(ErrorEvent(text, "stream"), session.id)
            message = partial.message("error", text, provider, model)
        if message.provider is None or message.model is None:
            message = replace(message, provider=message.provider or provider, model=message.model or model)
        return Reply(message, held, kind if message.stop_reason == "error" else None)
