"""One turn: record the input, call the model, run its tool calls, repeat until an answer, settle.

``Turn`` owns the turn's book-keeping and its invariants: every recorded tool call ends with
exactly one recorded result (after an abort, a failure or a guard stop too), aborted or failed
replies are stored but never replayed, and each model call is priced once and reported with
exactly one ``UsageEvent``. Hooks are reached only through the host's dispatcher.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from collections.abc import Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from crab._builtin.compaction import summary_note
from crab._builtin.loop_guard import LoopGuard
from crab._builtin.tool_view import hinted, tool_specs
from crab._contracts.errors import CrabError, PluginError, ProviderError
from crab._contracts.events import (
    ErrorEvent,
    Event,
    MessageEnd,
    NoticeEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolResultEvent,
    TurnEnded,
    TurnStarted,
    TurnStop,
    UsageEvent,
)
from crab._contracts.interception import redacted_ask
from crab._contracts.messages import (
    AssistantMessage,
    Thinking,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    hash_bytes,
    message_to_dict,
    unique_id,
    usage_to_dict,
)
from crab._contracts.providers import ModelRequest
from crab._contracts.tools import Tool, ToolContext, ToolResult, ToolSpec
from crab._loop.history import INTERRUPTED, repair
from crab._loop.pricing import with_cost
from crab._loop.session import QueuedInput, Session, TurnOutcome
from crab._loop.tool_runner import ToolRunner

if TYPE_CHECKING:
    from crab._loop.agent import Agent, CompactionReason

SCHEMAS_SENT = "[crab] The full schemas of {names} are in your tool list now. Continue."
"""Recorded after a reply that only hinted at tools, so the model gets the next step."""
STUB_CALL_NOTE = "(This tool was listed without its schema; its full schema is in your tool list for this turn.)"

FINAL_ANSWER_NOTE = (
    "You have reached the limit of tool calls for this turn. Do not call tools; answer now with "
    "what you have found, and say what is left undone."
)


@dataclass
class Partial:
    """What a provider has streamed so far, kept so an abort can record it."""

    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    calls: int = 0

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


class Turn:
    """Runs one input of one session to its end; ``run`` never raises except on cancellation
    from outside or a plugin failure in strict mode (``PluginError``)."""

    def __init__(self, agent: Agent, session: Session, item: QueuedInput, queue: Any) -> None:
        self.agent = agent
        self.session = session
        self.item = item
        self.queue = queue
        self.id = secrets.token_hex(4)
        self.usage = Usage()
        self.text = ""
        self.tool_calls = 0
        self.partial: Partial | None = None
        self.pending: dict[str, ToolCall] = {}
        self.results: dict[str, ToolResultMessage] = {}
        self.steered: list[QueuedInput] = []
        self.sent_full: set[str] = set()  # tools whose full schema the last request with tools carried

    def emit(self, event: Any) -> None:
        self.agent.emit(event, self.session.id)

    async def run(self) -> TurnOutcome:
        session = self.session
        self.emit(TurnStarted(session.id, self.id, self.item.text))
        stop: TurnStop
        error: str | None = None
        try:
            await self._record_input(self.item, self.queue)
            stop, error = await self._iterate()
        except asyncio.CancelledError:
            await self._settle("aborted")
            stop = "aborted"
            if not session.abort_requested:
                raise
        except PluginError:  # strict mode: pair what is open, then end the run (exit 2)
            await self._settle("error")
            raise
        except Exception as exc:
            error = str(exc) if isinstance(exc, CrabError) else f"internal error: {type(exc).__name__}: {exc}"
            self.emit(ErrorEvent(error, "unknown"))
            await self._settle("error")
            stop = "error"
        outcome = TurnOutcome(
            stop=stop,
            text=self.text,
            usage=self.usage,
            error=error,
            turn_id=self.id,
            session_id=session.id,
            tool_calls=self.tool_calls,
        )
        for steered in self.steered:
            if not steered.outcome.done():
                steered.outcome.set_result(replace(outcome, error=None, tool_calls=0))
        self.emit(TurnEnded(session.id, self.id, stop, self.text, self.usage, error))
        return outcome

    async def _record_input(self, item: QueuedInput, queue: Any) -> None:
        await self.agent.record_message(self.session, UserMessage(item.text))
        if item in queue:
            queue.remove(item)  # written: no longer in flight

    async def _iterate(self) -> tuple[TurnStop, str | None]:
        guard = LoopGuard()
        limit = self.agent.max_iterations
        for _ in range(limit):
            message = await self._model_call(with_tools=True)
            if message.stop_reason == "error":
                return "error", message.error
            if not message.tool_calls:
                if await self._hinted_only(message):
                    continue
                return "end", None
            stop = await self._run_tools(message, guard)
            if stop is not None:
                return "guard", stop
            await self._take_steering()
        self.agent.notice(f"reached the cap of {limit} model calls; asking for a final answer", "warning")
        message = await self._model_call(with_tools=False, note=FINAL_ANSWER_NOTE)
        if message.stop_reason == "error":
            return "error", message.error
        if message.tool_calls:
            await self._pair_all(message.tool_calls, "Skipped: the iteration cap was reached.")
        return "max_iterations", None

    async def _take_steering(self) -> None:
        steering = self.session.steering
        while steering:
            item = steering[0]
            await self._record_input(item, steering)
            self.steered.append(item)

    # --- model calls ------------------------------------------------------------------------

    async def _hinted_only(self, message: AssistantMessage) -> bool:
        """A reply that only hints at tools (``$name``) not expanded yet gets the next step at once,
        with their schemas: one recorded note says so (the reply stays the model's)."""
        if self.agent.tool_view() != "progressive" or not message.replayable:
            return False
        new = sorted(hinted(message.content, self.agent.tools) - self.sent_full)
        if not new:
            return False
        names = ", ".join(new)
        await self.agent.record_message(self.session, UserMessage(SCHEMAS_SENT.format(names=names)))
        # Renderers show the step between this reply and the next (else their text runs together).
        self.emit(NoticeEvent(f"full schema{'s' if len(new) > 1 else ''} sent: {names}"))
        return True

    async def _request(self, *, with_tools: bool, note: str | None) -> ModelRequest:
        """The next request as plugins leave it (``crab_before_model_call``)."""
        agent, session = self.agent, self.session
        system = await agent.system_prompt(session)
        if note:
            system = f"{system}\n\n{note}" if system else note
        tools: tuple[ToolSpec, ...] = ()
        if with_tools:
            view = agent.tool_view()
            expanded = agent.expanded_tools(session) if view == "progressive" else set(agent.tools)
            tools = tool_specs(agent.tools, view, expanded)
            self.sent_full = expanded
        request = ModelRequest(
            model=agent.model,
            system=system,
            messages=tuple(session.messages),
            tools=tools,
            max_tokens=agent.max_tokens,
            temperature=agent.temperature,
        )
        return await agent.host.dispatch.before_model_call(request, session.id)

    async def _compact(self, reason: CompactionReason) -> bool:
        compacted = await self.agent.compact(self.session, reason)
        if compacted is None:
            return False
        self.usage = self.usage + compacted.usage
        return True

    async def _model_call(self, *, with_tools: bool, note: str | None = None) -> AssistantMessage:
        """One model call. Past the budget's threshold the history is compacted first; when the
        provider says the request did not fit, it is compacted and the call is retried once."""
        agent, session = self.agent, self.session
        budget = agent.budget(session)
        request = await self._request(with_tools=with_tools, note=note)
        if budget.over(request):
            if await self._compact("threshold"):
                request = await self._request(with_tools=with_tools, note=note)
            else:
                budget.hold(request)
        message, overflow = await self._call(request, hold_overflow=True)
        if overflow is not None:
            budget.overflowed(request)
            if await self._compact("overflow"):
                request = await self._request(with_tools=with_tools, note=note)
                message, _ = await self._call(request, hold_overflow=False)
            else:
                self.emit(overflow)
        if message.replayable:
            budget.learn(request, message.usage)
        if message.replayable:
            self.text = message.content
        return message

    async def _call(self, request: ModelRequest, *, hold_overflow: bool) -> tuple[AssistantMessage, ErrorEvent | None]:
        """Stream ``request`` and record the reply; with ``hold_overflow`` a context-overflow error
        before any output is returned instead of shown (the caller may compact and retry)."""
        agent, session = self.agent, self.session
        system_sha = hashlib.sha256(hash_bytes(request.system)).hexdigest()
        if system_sha not in session.system_hashes:
            await agent.append_entry(
                session, "event", {"kind": "system_prompt", "sha256": system_sha, "text": request.system}
            )
            session.system_hashes.add(system_sha)
        message, overflow = await self._stream(request, hold_overflow=hold_overflow)
        usage = message.usage
        if usage is not None:
            usage = with_cost(usage, agent.model_info())
            message = replace(message, usage=usage)
            self.usage = self.usage + usage
            self.emit(UsageEvent(usage))
        await agent.record_message(session, message)
        event: dict[str, Any] = {
            "kind": "model_call",
            "model": message.model or agent.model,
            "provider": message.provider or agent.provider.name,
            "system_sha256": system_sha,
            "stop_reason": message.stop_reason,
        }
        if usage is not None:
            event["usage"] = usage_to_dict(usage)
        if overflow is not None:
            event["error_kind"] = "context_overflow"
        await agent.append_entry(session, "event", event)
        return message, overflow

    async def _stream(
        self, request: ModelRequest, *, hold_overflow: bool = False
    ) -> tuple[AssistantMessage, ErrorEvent | None]:
        """The provider's reply; its own ``UsageEvent``s are not forwarded (the loop reports usage once).

        With ``hold_overflow``, a context-overflow error that comes before any output is returned
        as the second value instead of being emitted."""
        held: ErrorEvent | None = None
        agent = self.agent
        partial = self.partial = Partial()
        provider, model = agent.provider.name, agent.model
        message: AssistantMessage | None = None
        taken: set[str] = set()  # call ids already shown: a repeated one is renamed, as in the message
        try:
            async with aclosing(agent.provider.stream(request)) as stream:  # type: ignore[type-var]
                async for event in stream:
                    if isinstance(event, ToolCallEvent):
                        partial.calls += 1
                        event = ToolCallEvent(replace(event.call, id=unique_id(event.call.id, taken)))
                    elif isinstance(event, TextDelta):
                        partial.text.append(event.text)
                    elif isinstance(event, ThinkingDelta):
                        partial.thinking.append(event.text)
                    elif isinstance(event, UsageEvent):
                        continue
                    elif isinstance(event, ErrorEvent):
                        if hold_overflow and event.kind == "context_overflow" and partial.empty:
                            held = event
                        else:
                            self.emit(event)
                        message = partial.message("error", event.message, provider, model)
                        break
                    elif isinstance(event, MessageEnd):
                        message = unique_call_ids(event.message)
                        break
                    self.emit(event)
        except ProviderError as exc:
            if hold_overflow and exc.kind == "context_overflow" and partial.empty:
                held = ErrorEvent(str(exc), exc.kind)
            else:
                self.emit(ErrorEvent(str(exc), exc.kind))
            message = partial.message("error", str(exc), provider, model)
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as exc:
            text = f"provider {provider} failed: {type(exc).__name__}: {exc}"
            self.emit(ErrorEvent(agent.redactor.text(text), "unknown"))
            message = partial.message("error", text, provider, model)
        self.partial = None
        if message is None:
            text = f"provider {provider} ended its stream without a final message"
            self.emit(ErrorEvent(text, "stream"))
            message = partial.message("error", text, provider, model)
        if message.provider is None or message.model is None:
            message = replace(message, provider=message.provider or provider, model=message.model or model)
        return message, held

    # --- tools ------------------------------------------------------------------------------

    def _tool_context(self, call: ToolCall, tool: Tool) -> ToolContext:
        return tool_context(self.agent, self.session, call, tool, self.emit)

    async def _run_tools(self, message: AssistantMessage, guard: LoopGuard) -> str | None:
        self.pending = {call.id: call for call in message.tool_calls}
        self.results = {}
        self.tool_calls += len(message.tool_calls)
        runner = ToolRunner(
            self.agent.host.dispatch, self.agent.tools, self.agent.tool_timeout, self._tool_context, self._record_result
        )
        outcome = await runner.run_all(message.tool_calls, guard, lambda: bool(self.session.steering))
        self.session.messages.extend(self.results[c.id] for c in message.tool_calls if c.id in self.results)
        self.pending, self.results = {}, {}
        if outcome.guard_stop is not None:
            self.agent.notice(f"loop guard stopped the turn: {outcome.guard_stop}", "warning")
        return outcome.guard_stop

    async def _record_result(self, call: ToolCall, result: ToolResult, duration_ms: float) -> None:
        if call.id not in self.pending:
            return  # already settled (an abort raced the tool)
        content = result.content
        stub = call.name in self.agent.tools and call.name not in self.sent_full
        invalid = result.is_error and content.startswith(f"invalid arguments for {call.name}")
        if invalid and stub and self.agent.tool_view() == "progressive":
            content = f"{content}\n{STUB_CALL_NOTE}"
        message = ToolResultMessage(call.id, call.name, content, result.is_error)
        await self.agent.append_entry(self.session, "tool_result", message_to_dict(message))
        self.pending.pop(call.id, None)
        self.results[call.id] = message
        self.emit(ToolResultEvent(call.id, call.name, content, result.is_error, duration_ms))

    async def _pair_all(self, calls: tuple[ToolCall, ...], reason: str) -> None:
        self.pending = {c.id: c for c in calls}
        for call in calls:
            await self._record_result(call, ToolResult(reason, is_error=True), 0.0)
        self.session.messages.extend(self.results.values())
        self.pending, self.results = {}, {}

    async def _settle(self, why: str) -> None:
        """After an abort or a failure: keep the partial reply out of context and pair every call."""
        agent, session = self.agent, self.session
        try:
            if self.partial is not None and (self.partial.text or self.partial.thinking):
                stop = "aborted" if why == "aborted" else "error"
                partial = self.partial.message(stop, why, agent.provider.name, agent.model)
                await agent.append_entry(session, "message", message_to_dict(partial))
            self.partial = None
            reason = INTERRUPTED if why == "aborted" else f"Not run: the turn failed ({why})."
            for call in list(self.pending.values()):
                await self._record_result(call, ToolResult(reason, is_error=True), 0.0)
        except PluginError:  # strict mode: the run ends; repair pairs what is left on resume
            session.messages = repair([*session.messages, *self.results.values()])
            raise
        except Exception as exc:  # the store itself may be what failed; say so and keep the cache sane
            self.emit(ErrorEvent(f"could not record the end of the turn: {exc}", "unknown"))
        session.messages = repair([*session.messages, *self.results.values()])
        self.pending, self.results = {}, {}


def unique_call_ids(message: AssistantMessage) -> AssistantMessage:
    """``message`` with a call id repeated by the provider renamed (``id_2``…), in order, the way
    its forwarded ``ToolCallEvent``s were: results pair with calls by id, so every call needs its own."""
    taken: set[str] = set()
    calls = tuple(replace(call, id=unique_id(call.id, taken)) for call in message.tool_calls)
    return message if calls == message.tool_calls else replace(message, tool_calls=calls)


def handoff_note(handoff: Mapping[str, Any] | None) -> str | None:
    """The system prompt's note about a handoff anchor (with its summary), if the session has one."""
    if not handoff:
        return None
    compacted = summary_note(handoff)
    if compacted is not None:
        return compacted
    state = handoff.get("state") or {}
    summary = state.get("summary") if isinstance(state, Mapping) else None
    note = f"Earlier conversation was handed off at anchor {handoff.get('name')!r}."
    return f"{note} Summary: {summary}" if summary else note


def tool_context(
    agent: Agent, session: Session, call: ToolCall, tool: Tool, emit: Callable[[Event], None]
) -> ToolContext:
    """What a tool (or a ``!cmd``) running for ``session`` sees of the agent."""
    return ToolContext(
        session_id=session.id,
        workspace=session.workspace,
        call_id=call.id,
        settings=agent.config.plugin_settings(tool.plugin) if tool.plugin else {},
        state=session.state,
        emit=emit,
        config=agent.config,
        ask=redacted_ask(session.ask if session.ask is not None else agent.ask, agent.redactor.text),
        local=agent.local,
    )
