"""One turn: record the input, call the model, run its tool calls, repeat until an answer, settle;
given its ``TurnParts``, never reaching back into the agent (docs/architecture.md#the-agent-and-the-turn)."""

from __future__ import annotations

import asyncio
import calendar
import json
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from crab._contracts.errors import CrabError, PluginError
from crab._contracts.events import ErrorEvent, Event, ToolResultEvent, TurnEnded, TurnStarted, TurnStop
from crab._contracts.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    message_to_dict,
)
from crab._contracts.providers import ModelRequest
from crab._contracts.tools import Tool, ToolContext, ToolResult, ToolSpec
from crab._loop.budget import TokenBudget
from crab._loop.compaction import Compacted, CompactionReason
from crab._loop.history import INTERRUPTED, NO_REPLY, repair
from crab._loop.images import ImageLimits
from crab._loop.model_call import AppendEntry, ModelCalls, Partial, Reply
from crab._loop.model_choice import ModelChoice
from crab._loop.session import QueuedInput, Session, TurnOutcome
from crab._loop.tool_runner import ToolRunner

FULL_SCHEMA = "Its full schema: {schema}"
"""Added to a failed call's error result when the request listed the tool without its full schema."""
DATE_NOTE = "[crab] Today is {date}."
"""Recorded after a prompt when the local date is not the one last told: the session's date (in
the system prompt, fixed for the session: ``session_date``) or an earlier note. The prompt never
shows today's date, which would change the whole cached prefix of a session continued next day."""
FINAL_ANSWER_NOTE = (
    "[crab] You have reached the limit of tool calls for this turn. Do not call tools; answer now "
    "with what you have found, and say what is left undone."
)


def today() -> str:
    """The local date the date note tells (a function so tests can fix it)."""
    return time.strftime("%Y-%m-%d")


def session_date(session_id: str) -> str | None:
    """The local date a session started on, read from its id (``crab.new_session_id``: UTC time
    first), so every process derives the same; None for an id of another form."""
    try:
        started = calendar.timegm(time.strptime(session_id[:15], "%Y%m%dT%H%M%S"))
    except ValueError:
        return None
    return time.strftime("%Y-%m-%d", time.localtime(started))


def date_note(messages: Sequence[Message], date: str, started: str | None) -> str | None:
    """The note to record after a prompt when ``date`` is not the date last told: the last date
    note in ``messages``, else the session's date (``started``, in the system prompt)."""
    prefix = DATE_NOTE.partition("{")[0]
    told = started
    for message in reversed(messages):
        if isinstance(message, UserMessage) and message.content.startswith(prefix):
            told = message.content.removeprefix(prefix).rstrip(".")
            break
    return None if told == date else DATE_NOTE.format(date=date)


@dataclass(frozen=True, slots=True)
class LoopSettings:
    """The ``[crab]`` settings a turn runs with."""

    max_iterations: int = 25
    tool_timeout: float = 120.0
    max_tokens: int | None = None
    temperature: float | None = None
    images: ImageLimits = field(default_factory=ImageLimits)


@dataclass(frozen=True, slots=True)
class TurnParts:
    """What a turn runs with, given once by the agent that owns the session."""

    settings: LoopSettings
    calls: ModelCalls
    tools: Callable[[], Mapping[str, Tool]]
    """The registry of every loaded plugin's tools (read per request: plugins may add tools)."""
    system_prompt: Callable[[Session], Awaitable[str]]
    budget: Callable[[Session], TokenBudget]
    compact: Callable[[Session, CompactionReason], Awaitable[Compacted | None]]
    record_message: Callable[[Session, Message], Awaitable[None]]
    append_entry: AppendEntry
    message_payload: Callable[[Message], Awaitable[dict[str, Any]]]
    """A message's entry payload, its images' bytes put in the store first."""
    load_images: Callable[[Session], Awaitable[None]]
    """Fill the bytes of images the context names only by hash (read back from the store)."""
    tool_context: Callable[[Session, ToolCall, Tool], ToolContext]
    notice: Callable[[str, str], None]
    known_window: Callable[[Session], int | None] = lambda session: None
    """The context window of the session's model when known (a status line's share of it)."""
    config: Any = None
    """The agent's config, for the hooks that take it (``crab_prompt_submit``); None in a child
    agent's turn, whose input the model wrote."""


class Turn:
    """Runs one input of one session to its end; ``run`` never raises except on cancellation
    from outside or a plugin failure in strict mode (``PluginError``).

    Its invariants: every recorded tool call ends with exactly one recorded result (after an
    abort, a failure or a stop by a plugin too), and aborted or failed replies are stored but
    never replayed.
    """

    def __init__(self, parts: TurnParts, session: Session, item: QueuedInput, queue: Any) -> None:
        self.parts = parts
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
        self.continued = 0  # times a crab_turn_end hook kept this turn going
        self._system: str | None = None  # gathered once per turn, again after a compaction
        self.choice: ModelChoice = parts.calls.choose(session)
        """The provider and model of the last request (``/model`` takes effect at the next one)."""

    def emit(self, event: Event) -> None:
        self.parts.calls.emit(event, self.session.id)

    async def run(self) -> TurnOutcome:
        session = self.session
        self.emit(TurnStarted(session.id, self.id, self.item.text))
        stop: TurnStop
        error: str | None = None
        try:
            await self._record_missing_reply()
            refused = await self._record_input(self.item, self.queue)
            if refused is None:
                stop, error = await self._iterate()
            else:
                stop, error = "error", refused
                self.emit(ErrorEvent(refused, "plugin"))
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
        self.usage, session.side_usage = self.usage + session.side_usage, Usage()
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
        window = self.parts.known_window(session)
        self.emit(TurnEnded(session.id, self.id, stop, self.text, self.usage, error, self.choice.model, window))
        return outcome

    async def _record_input(self, item: QueuedInput, queue: Any) -> str | None:
        """Record one input and the context ``crab_prompt_submit`` adds; the refusal line when a
        hook refused it (then nothing is recorded)."""
        session = self.session
        refused, context = await self.parts.calls.dispatch.prompt_submit(
            prompt=item.text, session_id=session.id, workspace=session.workspace, config=self.parts.config
        )
        if refused is not None:
            if item in queue:
                queue.remove(item)  # refused on purpose: nothing is left in flight
            return f"prompt refused: {refused.reason}"
        await self.parts.record_message(session, UserMessage(item.text, images=item.images))
        for extra in context:
            await self.parts.record_message(session, self._fitted(extra))
        note = date_note(session.messages, today(), session_date(session.id))
        if note is not None:
            await self.parts.record_message(session, UserMessage(note))
        if item in queue:
            queue.remove(item)  # written: no longer in flight
        return None

    async def _record_missing_reply(self) -> None:
        """When the last turn got no reply (aborted, failed, crab stopped), record ``NO_REPLY``
        before this turn's prompt: in the store, so the context a resume reads is the one this
        process sends (a repair that inserted it on resume changed the resumed prefix)."""
        messages = self.session.messages
        if messages and isinstance(messages[-1], UserMessage):
            await self.parts.record_message(self.session, AssistantMessage(content=NO_REPLY))

    def _fitted(self, extra: str | UserMessage) -> UserMessage:
        """A hook's context as a message, its images within the caps (a note for each left out)."""
        if isinstance(extra, str):
            return UserMessage(extra)
        if not extra.images:
            return extra
        images, notes = self.parts.settings.images.fit_result(extra.images)
        return UserMessage("\n".join([extra.content, *notes]).strip(), images=images)

    async def _iterate(self) -> tuple[TurnStop, str | None]:
        limit = self.parts.settings.max_iterations
        for _ in range(limit):
            message = await self._model_call()
            if message.stop_reason == "error":
                return "error", message.error
            if not message.tool_calls:
                if await self._going_on():
                    continue
                return "end", None
            stop = await self._run_tools(message)
            if stop is not None:
                return "guard", stop
            await self._take_steering()
        self.parts.notice(f"reached the cap of {limit} model calls; asking for a final answer", "warning")
        # Asked as a recorded note with the same tools and system prompt: the request's prefix
        # stays the cached one (tools are offered, and a call made anyway is paired as skipped).
        await self.parts.record_message(self.session, UserMessage(FINAL_ANSWER_NOTE))
        message = await self._model_call()
        if message.stop_reason == "error":
            return "error", message.error
        if message.tool_calls:
            await self._pair_all(message.tool_calls, "Skipped: the iteration cap was reached.")
        return "max_iterations", None

    async def _take_steering(self) -> None:
        steering = self.session.steering
        while steering:
            item = steering[0]
            refused = await self._record_input(item, steering)
            if refused is None:
                self.steered.append(item)
                continue
            self.parts.notice(refused, "warning")
            if not item.outcome.done():
                item.outcome.set_result(TurnOutcome(stop="error", error=refused, session_id=self.session.id))

    async def _going_on(self) -> bool:
        """Whether a ``crab_turn_end`` hook keeps the turn going after this answer (its text is
        recorded for the model)."""
        session = self.session
        text = await self.parts.calls.dispatch.turn_end(
            session_id=session.id, workspace=session.workspace, text=self.text, continued=self.continued
        )
        if text is None:
            return False
        self.continued += 1
        await self.parts.record_message(session, UserMessage(text))
        return True

    # --- model calls ------------------------------------------------------------------------

    async def _request(self) -> ModelRequest:
        """The next request as plugins leave it (``crab_before_model_call``: the tool view shapes
        its tools there). Its system prompt and tools are the session's prefix: the same bytes on
        every request until the configuration, the tool set or a compaction changes them
        (``tests/test_request_prefix.py``); whatever varies is a recorded message."""
        parts, session = self.parts, self.session
        await parts.load_images(session)
        if self._system is None:
            self._system = await parts.system_prompt(session)
        tools = parts.tools()
        specs: tuple[ToolSpec, ...] = tuple(tool.spec() for tool in tools.values())
        self.choice = parts.calls.choose(session)
        request = ModelRequest(
            model=self.choice.model,
            system=self._system,
            messages=tuple(session.messages),
            tools=specs,
            max_tokens=parts.settings.max_tokens,
            temperature=parts.settings.temperature,
        )
        request = await parts.calls.prepare(session, request, tools)
        session.described = described(request.tools, tools)
        return request

    async def _compact(self, reason: CompactionReason) -> bool:
        compacted = await self.parts.compact(self.session, reason)
        if compacted is None:
            return False
        self.usage = self.usage + compacted.usage
        self._system = None  # the summary is in the system prompt now
        return True

    async def _model_call(self) -> AssistantMessage:
        """One model call. Past the budget's threshold the history is compacted first; when the
        provider says the request did not fit, it is compacted and the call is retried once."""
        budget = self.parts.budget(self.session)
        request = await self._request()
        if budget.over(request):
            if await self._compact("threshold"):
                request = await self._request()
            else:
                budget.hold(request)
        reply = await self._send(request, hold_overflow=True)
        message = reply.message
        if reply.overflow is not None:
            budget.overflowed(request)
            if await self._compact("overflow"):
                request = await self._request()
                message = (await self._send(request, hold_overflow=False)).message
            else:
                self.emit(reply.overflow)
        if message.replayable:
            budget.learn(request, message.usage)
            self.text = message.content
        return message

    async def _send(self, request: ModelRequest, *, hold_overflow: bool) -> Reply:
        """Stream ``request``, keeping what arrives for an abort, and record the reply."""
        partial = self.partial = Partial()
        session = self.session
        reply = await self.parts.calls.send(
            session,
            request,
            partial=partial,
            hold_overflow=hold_overflow,
            record_reply=lambda message: self.parts.record_message(session, message),
            choice=self.choice,
        )
        self.partial = None
        if reply.message.usage is not None:
            self.usage = self.usage + reply.message.usage
        return reply

    # --- tools ------------------------------------------------------------------------------

    async def _run_tools(self, message: AssistantMessage) -> str | None:
        self.pending = {call.id: call for call in message.tool_calls}
        self.results = {}
        self.tool_calls += len(message.tool_calls)
        session = self.session
        runner = ToolRunner(
            self.parts.calls.dispatch,
            self.parts.tools(),
            self.parts.settings.tool_timeout,
            self._tool_context,
            self._record_result,
        )
        outcome = await runner.run_all(message.tool_calls, lambda: bool(session.steering))
        session.messages.extend(self.results[c.id] for c in message.tool_calls if c.id in self.results)
        self.pending, self.results = {}, {}
        if outcome.stopped is not None:
            self.parts.notice(f"the turn was stopped: {outcome.stopped}", "warning")
        return outcome.stopped

    def _tool_context(self, call: ToolCall, tool: Tool) -> ToolContext:
        ctx = self.parts.tool_context(self.session, call, tool)
        ctx.add_usage = self._add_usage
        return ctx

    def _add_usage(self, usage: Usage) -> None:
        """Usage a tool call spent itself (a child session's turn) counts in this turn's."""
        self.usage = self.usage + usage

    async def _record_result(self, call: ToolCall, result: ToolResult, duration_ms: float) -> None:
        if call.id not in self.pending:
            return  # already settled (an abort raced the tool)
        content = result.content
        invalid = result.is_error and content.startswith(f"invalid arguments for {call.name}")
        tool = self.parts.tools().get(call.name) if invalid else None
        if tool is not None and call.name not in self.session.described:
            # The request listed a stub: the schema arrives as message content, the prefix stays.
            schema = json.dumps(tool.parameters, ensure_ascii=False, separators=(",", ":"))
            content = f"{content}\n{FULL_SCHEMA.format(schema=schema)}"
        images, notes = self.parts.settings.images.fit_result(result.images)
        if notes:
            content = "\n".join([content, *notes])
        message = ToolResultMessage(call.id, call.name, content, result.is_error, images=images)
        await self.parts.append_entry(self.session, "tool_result", await self.parts.message_payload(message))
        self.pending.pop(call.id, None)
        self.results[call.id] = message
        self.emit(ToolResultEvent(call.id, call.name, content, result.is_error, duration_ms, result.diffs))

    async def _pair_all(self, calls: tuple[ToolCall, ...], reason: str) -> None:
        self.pending = {c.id: c for c in calls}
        for call in calls:
            await self._record_result(call, ToolResult(reason, is_error=True), 0.0)
        self.session.messages.extend(self.results.values())
        self.pending, self.results = {}, {}

    async def _settle(self, why: str) -> None:
        """After an abort or a failure: keep the partial reply out of context and pair every call."""
        session, choice = self.session, self.choice
        try:
            if self.partial is not None and (self.partial.text or self.partial.thinking):
                stop = "aborted" if why == "aborted" else "error"
                partial = self.partial.message(stop, why, choice.provider.name, choice.model)
                await self.parts.append_entry(session, "message", message_to_dict(partial))
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


def described(specs: tuple[ToolSpec, ...], tools: Mapping[str, Tool]) -> frozenset[str]:
    """Names of the registered tools whose schema ``specs`` (a prepared request's) carries in full."""
    names = []
    for spec in specs:
        tool = tools.get(spec.name)
        if tool is not None and (spec.parameters is tool.parameters or spec.parameters == tool.parameters):
            names.append(spec.name)
    return frozenset(names)
