"""The agent loop: one pipeline from input to final answer for every channel.

route → record → tools → context → model → tool calls → record → repeat → finish. Each turn is
an asyncio task that ``abort`` cancels; whatever happens, every recorded tool call ends with
exactly one recorded result, and aborted or failed replies are never sent to a provider again.
The loop never prints: it emits events to its listeners and to the ``crab_event`` hook.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import secrets
from collections.abc import Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from crab.auth import known_secrets
from crab.commands import Command, CommandContext, CommandResult
from crab.config import Config
from crab.errors import CrabError, ProviderError
from crab.events import (
    CommandOutput,
    ErrorEvent,
    Event,
    MessageEnd,
    NoticeEvent,
    TextDelta,
    ThinkingDelta,
    ToolResultEvent,
    TurnEnded,
    TurnStarted,
    TurnStop,
    UsageEvent,
)
from crab.handles import AgentHandle
from crab.interception import AskUser
from crab.loop.guard import LoopGuard
from crab.loop.history import INTERRUPTED, load_history, repair
from crab.loop.router import did_you_mean, route
from crab.loop.session import QueuedInput, Session, TurnOutcome
from crab.loop.tool_runner import ToolRunner
from crab.messages import (
    AssistantMessage,
    Message,
    Thinking,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    message_to_dict,
    usage_to_dict,
)
from crab.plugins import PluginHost
from crab.pricing import with_cost
from crab.providers import ModelInfo, ModelRequest, Provider
from crab.redaction import Redactor
from crab.storage import EntryType, Store
from crab.tools import Tool, ToolContext, ToolResult

FINAL_ANSWER_NOTE = (
    "You have reached the limit of tool calls for this turn. Do not call tools; answer now with "
    "what you have found, and say what is left undone."
)
Listener = Callable[[Event], None]


@dataclass
class _Partial:
    """What a provider has streamed so far, kept so an abort can record it."""

    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)

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


@dataclass
class _Turn:
    """Book-keeping of the running turn: id, usage, and what is not yet recorded."""

    id: str
    usage: Usage = field(default_factory=Usage)
    text: str = ""
    tool_calls: int = 0
    partial: _Partial | None = None
    pending: dict[str, ToolCall] = field(default_factory=dict)
    results: dict[str, ToolResultMessage] = field(default_factory=dict)
    steered: list[QueuedInput] = field(default_factory=list)


class Agent:
    """Runs turns for sessions of one store with one provider and model.

    ``ask`` is how the active channel asks the user for permission (None: nobody can answer,
    so the gate refuses). ``local`` is False for remote channels, which may not run ``!shell``.
    """

    def __init__(
        self,
        host: PluginHost,
        config: Config,
        *,
        store: Store,
        provider: Provider,
        model: str,
        workspace: Path,
        ask: AskUser | None = None,
        local: bool = True,
    ) -> None:
        self.host = host
        self.config = config
        self.store = store
        self.provider = provider
        self.model = model
        self.workspace = workspace
        self.ask = ask
        self.local = local
        self.max_iterations = int(config.get("crab.max_iterations", 25))
        self.tool_timeout = float(config.get("crab.tool_timeout", 120.0))
        self.max_tokens: int | None = config.get("crab.max_tokens")
        self.temperature: float | None = config.get("crab.temperature")
        self.redactor = Redactor(known_secrets(config))
        self._listeners: list[Listener] = []
        self._model_info: ModelInfo | None = None

    # --- registries and lifecycle ---------------------------------------------------------

    @property
    def tools(self) -> dict[str, Tool]:
        return self.host.registry("tools")

    @property
    def commands(self) -> dict[str, Command]:
        return self.host.registry("commands")

    def model_info(self) -> ModelInfo | None:
        if self._model_info is None:
            try:
                models = self.provider.models()
            except Exception:
                models = []
            self._model_info = next((m for m in models if m.id == self.model), None)
        return self._model_info

    async def start(self) -> None:
        """Open the store and run ``crab_startup`` hooks (a failing plugin is reported and dropped)."""
        await self.store.open()
        for plugin, value in self.host.call_each("crab_startup", agent=AgentHandle(self)):
            try:
                if inspect.isawaitable(value):
                    await value
            except Exception as exc:
                self.host.fail(plugin, f"crab_startup raised {type(exc).__name__}: {exc}")
        for record in self.host.problems():
            self.notice(f"plugin {record.name} {record.status}: {record.reason}", "warning")

    async def close(self) -> None:
        """Run ``crab_shutdown`` hooks and close the store; failures are reported, never raised."""
        for plugin, value in self.host.call_each("crab_shutdown", agent=AgentHandle(self)):
            try:
                if inspect.isawaitable(value):
                    await value
            except Exception as exc:
                self.host.fail(plugin, f"crab_shutdown raised {type(exc).__name__}: {exc}")
        try:
            await self.store.close()
        except Exception as exc:
            self.notice(f"closing the {self.store.name} store failed: {exc}", "warning")

    # --- events -----------------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Receive every event; returns a function that unsubscribes."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def emit(self, event: Event, session_id: str = "") -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception as exc:  # a broken renderer must not end the turn
                self._listeners.remove(listener)
                self.notice(f"a renderer failed and was detached: {type(exc).__name__}: {exc}", "warning")
        for plugin, function in self.host.implementations("crab_event"):
            try:
                function(event=event, session_id=session_id)
            except Exception as exc:
                self.host.fail(plugin, f"crab_event raised {type(exc).__name__}: {exc}")
                self.notice(f"plugin {plugin} failed in crab_event and was disabled: {exc}", "warning")

    def notice(self, message: str, level: str = "info") -> None:
        self.emit(NoticeEvent(message, "warning" if level == "warning" else "info"))

    # --- sessions ---------------------------------------------------------------------------

    async def new_session(self, title: str | None = None) -> Session:
        info = await self.store.create_session(str(self.workspace), title=title)
        return Session(info=info, workspace=self.workspace)

    async def resume(self, session_id: str) -> Session:
        """Load a stored session and repair what will go to the provider."""
        info = await self.store.get_session(session_id)
        history = load_history(await self.store.entries(session_id, since_handoff=True))
        if history.skipped:
            self.notice(f"{history.skipped} unreadable entries in session {session_id} were left out", "warning")
        workspace = Path(info.workspace) if info.workspace else self.workspace
        return Session(
            info=info,
            workspace=workspace,
            messages=history.messages,
            handoff=dict(history.handoff) if history.handoff else None,
        )

    async def latest_session(self) -> Session | None:
        """The most recently updated session of this workspace, resumed; None if there is none."""
        sessions = await self.store.list_sessions(str(self.workspace), limit=1)
        return await self.resume(sessions[0].id) if sessions else None

    async def handoff(self, session: Session, name: str, state: Mapping[str, Any] | None = None) -> None:
        """Record a handoff anchor: context for the model starts afresh after it."""
        payload = {"name": name, "kind": "handoff", "state": dict(state or {})}
        await self._append(session, "anchor", payload)
        session.messages = []
        session.handoff = payload

    # --- input ------------------------------------------------------------------------------

    async def handle_input(self, session: Session, text: str, *, steer: bool = False) -> TurnOutcome:
        """Route one input. Commands answer at once, even during a turn; model input starts a
        turn, or joins the running one (``steer``) or waits for it (follow-up)."""
        routed = route(text)
        if routed.kind == "command":
            return await self._run_command(session, routed.name, routed.args)
        if routed.kind == "shell":
            return await self._run_shell(session, routed.text)
        item = QueuedInput(routed.text)
        if session.busy:
            (session.steering if steer else session.follow_ups).append(item)
            return await item.outcome
        session.follow_ups.appendleft(item)
        session.busy = True
        try:
            while session.steering or session.follow_ups:
                queue = session.steering if session.steering else session.follow_ups
                current = queue[0]
                session.abort_requested = False
                session.task = asyncio.create_task(self._turn(session, current, queue))
                try:
                    outcome = await asyncio.shield(session.task)
                except asyncio.CancelledError:
                    # our caller was cancelled (Ctrl-C on the whole program): abort the turn cleanly
                    session.abort_requested = True
                    session.task.cancel()
                    outcome = await session.task
                    if not current.outcome.done():
                        current.outcome.set_result(outcome)
                    raise
                if not current.outcome.done():
                    current.outcome.set_result(outcome)
                if current in queue:
                    queue.remove(current)  # aborted or failed before it was written: the user sees the error
        finally:
            session.busy = False
            session.task = None
        return await item.outcome

    def abort(self, session: Session) -> bool:
        """Cancel the running turn of ``session``; False when nothing was running."""
        if session.task is None or session.task.done():
            return False
        session.abort_requested = True
        session.task.cancel()
        return True

    # --- the turn ---------------------------------------------------------------------------

    async def _turn(self, session: Session, item: QueuedInput, queue: Any) -> TurnOutcome:
        turn = _Turn(id=secrets.token_hex(4))
        self.emit(TurnStarted(session.id, turn.id, item.text), session.id)
        stop: TurnStop
        error: str | None = None
        try:
            await self._record_input(session, item, queue)
            stop, error = await self._iterate(session, turn)
        except asyncio.CancelledError:
            await self._settle(session, turn, "aborted")
            stop = "aborted"
            if not session.abort_requested:
                raise
        except Exception as exc:
            error = str(exc) if isinstance(exc, CrabError) else f"internal error: {type(exc).__name__}: {exc}"
            self.emit(ErrorEvent(error, "unknown"), session.id)
            await self._settle(session, turn, "error")
            stop = "error"
        for steered in turn.steered:
            if not steered.outcome.done():
                steered.outcome.set_result(
                    TurnOutcome(stop=stop, text=turn.text, usage=turn.usage, turn_id=turn.id, session_id=session.id)
                )
        self.emit(TurnEnded(session.id, turn.id, stop, turn.text, turn.usage, error), session.id)
        return TurnOutcome(
            stop=stop,
            text=turn.text,
            usage=turn.usage,
            error=error,
            turn_id=turn.id,
            session_id=session.id,
            tool_calls=turn.tool_calls,
        )

    async def _record_input(self, session: Session, item: QueuedInput, queue: Any) -> None:
        message = UserMessage(item.text)
        await self._record_message(session, message)
        if item in queue:
            queue.remove(item)  # written: no longer in flight

    async def _iterate(self, session: Session, turn: _Turn) -> tuple[TurnStop, str | None]:
        guard = LoopGuard()
        for _ in range(self.max_iterations):
            message = await self._model_call(session, turn, with_tools=True)
            if message.stop_reason == "error":
                return "error", message.error
            if not message.tool_calls:
                return "end", None
            stop = await self._run_tools(session, turn, message, guard)
            if stop is not None:
                return "guard", stop
            await self._take_steering(session, turn)
        self.notice(f"reached the cap of {self.max_iterations} model calls; asking for a final answer", "warning")
        message = await self._model_call(session, turn, with_tools=False, note=FINAL_ANSWER_NOTE)
        if message.stop_reason == "error":
            return "error", message.error
        if message.tool_calls:
            await self._pair_all(session, turn, message.tool_calls, "Skipped: the iteration cap was reached.")
        return "max_iterations", None

    async def _take_steering(self, session: Session, turn: _Turn) -> None:
        while session.steering:
            item = session.steering[0]
            await self._record_input(session, item, session.steering)
            turn.steered.append(item)

    # --- model calls ------------------------------------------------------------------------

    async def system_prompt(self, session: Session) -> str:
        parts: list[str] = []
        for _, value in self.host.call_each(
            "crab_system_prompt", workspace=session.workspace, session_id=session.id, config=self.config
        ):
            if isinstance(value, str) and value.strip():
                parts.append(value.strip())
            elif isinstance(value, list):
                parts.extend(str(v).strip() for v in value if str(v).strip())
        if session.handoff:
            state = session.handoff.get("state") or {}
            summary = state.get("summary") if isinstance(state, Mapping) else None
            note = f"Earlier conversation was handed off at anchor {session.handoff.get('name')!r}."
            parts.append(f"{note} Summary: {summary}" if summary else note)
        return "\n\n".join(parts)

    async def _model_call(
        self, session: Session, turn: _Turn, *, with_tools: bool, note: str | None = None
    ) -> AssistantMessage:
        system = await self.system_prompt(session)
        if note:
            system = f"{system}\n\n{note}" if system else note
        tools = tuple(t.spec() for t in self.tools.values()) if with_tools else ()
        request = ModelRequest(
            model=self.model,
            system=system,
            messages=tuple(session.messages),
            tools=tools,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
        )
        request = await self._before_model_call(request, session)
        system_sha = hashlib.sha256(request.system.encode()).hexdigest()
        if system_sha not in session.system_hashes:
            await self._append(
                session, "event", {"kind": "system_prompt", "sha256": system_sha, "text": request.system}
            )
            session.system_hashes.add(system_sha)
        message = await self._stream(session, turn, request)
        usage = message.usage
        if usage is not None:
            usage = self._priced(usage)
            message = replace(message, usage=usage)
            turn.usage = turn.usage + usage
        await self._record_message(session, message)
        event: dict[str, Any] = {
            "kind": "model_call",
            "model": message.model or self.model,
            "provider": message.provider or self.provider.name,
            "system_sha256": system_sha,
            "stop_reason": message.stop_reason,
        }
        if usage is not None:
            event["usage"] = usage_to_dict(usage)
        await self._append(session, "event", event)
        if message.replayable:
            turn.text = message.content
        return message

    async def _before_model_call(self, request: ModelRequest, session: Session) -> ModelRequest:
        for plugin, function in self.host.implementations("crab_before_model_call"):
            try:
                value = function(request=request, session_id=session.id)
                if inspect.isawaitable(value):
                    value = await value
            except Exception as exc:
                self.host.fail(plugin, f"crab_before_model_call raised {type(exc).__name__}: {exc}")
                self.notice(f"plugin {plugin} failed in crab_before_model_call and was disabled", "warning")
                continue
            if isinstance(value, ModelRequest):
                request = value
        return request

    async def _stream(self, session: Session, turn: _Turn, request: ModelRequest) -> AssistantMessage:
        partial = turn.partial = _Partial()
        provider, model = self.provider.name, self.model
        message: AssistantMessage | None = None
        try:
            async with aclosing(self.provider.stream(request)) as stream:  # type: ignore[type-var]
                async for event in stream:
                    if isinstance(event, TextDelta):
                        partial.text.append(event.text)
                    elif isinstance(event, ThinkingDelta):
                        partial.thinking.append(event.text)
                    elif isinstance(event, ErrorEvent):
                        self.emit(event, session.id)
                        message = partial.message("error", event.message, provider, model)
                        break
                    elif isinstance(event, MessageEnd):
                        message = event.message
                        break
                    self.emit(event, session.id)
        except ProviderError as exc:
            self.emit(ErrorEvent(str(exc), exc.kind), session.id)
            message = partial.message("error", str(exc), provider, model)
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as exc:
            text = f"provider {provider} failed: {type(exc).__name__}: {exc}"
            self.emit(ErrorEvent(self.redactor.text(text), "unknown"), session.id)
            message = partial.message("error", text, provider, model)
        turn.partial = None
        if message is None:
            text = f"provider {provider} ended its stream without a final message"
            self.emit(ErrorEvent(text, "stream"), session.id)
            message = partial.message("error", text, provider, model)
        if message.provider is None or message.model is None:
            message = replace(message, provider=message.provider or provider, model=message.model or model)
        if message.usage is not None:
            self.emit(UsageEvent(message.usage), session.id)
        return message

    def _priced(self, usage: Usage) -> Usage:
        """Fill in the cost from the model's configured prices when the provider did not."""
        return usage if usage.cost is not None else with_cost(usage, self.model_info())

    # --- tools ------------------------------------------------------------------------------

    def _tool_context(self, session: Session, call: ToolCall, tool: Tool) -> ToolContext:
        return ToolContext(
            session_id=session.id,
            workspace=session.workspace,
            call_id=call.id,
            settings=self.config.plugin_settings(tool.plugin) if tool.plugin else {},
            state=session.state,
            emit=lambda event: self.emit(event, session.id),
            config=self.config,
            ask=self.ask,
            local=self.local,
        )

    async def _run_tools(
        self, session: Session, turn: _Turn, message: AssistantMessage, guard: LoopGuard
    ) -> str | None:
        turn.pending = {call.id: call for call in message.tool_calls}
        turn.results = {}
        turn.tool_calls += len(message.tool_calls)

        async def record(call: ToolCall, result: ToolResult, duration_ms: float) -> None:
            await self._record_result(session, turn, call, result, duration_ms)

        runner = ToolRunner(
            self.host,
            self.tools,
            self.tool_timeout,
            lambda call, tool: self._tool_context(session, call, tool),
            record,
        )
        outcome = await runner.run_all(message.tool_calls, guard, lambda: bool(session.steering))
        session.messages.extend(turn.results[c.id] for c in message.tool_calls if c.id in turn.results)
        turn.pending, turn.results = {}, {}
        if outcome.guard_stop is not None:
            self.notice(f"loop guard stopped the turn: {outcome.guard_stop}", "warning")
        return outcome.guard_stop

    async def _record_result(
        self, session: Session, turn: _Turn, call: ToolCall, result: ToolResult, duration_ms: float
    ) -> None:
        if call.id not in turn.pending:
            return  # already settled (an abort raced the tool)
        message = ToolResultMessage(call.id, call.name, result.content, result.is_error)
        await self._append(session, "tool_result", message_to_dict(message))
        turn.pending.pop(call.id, None)
        turn.results[call.id] = message
        self.emit(ToolResultEvent(call.id, call.name, result.content, result.is_error, duration_ms), session.id)

    async def _pair_all(self, session: Session, turn: _Turn, calls: tuple[ToolCall, ...], reason: str) -> None:
        turn.pending = {c.id: c for c in calls}
        for call in calls:
            await self._record_result(session, turn, call, ToolResult(reason, is_error=True), 0.0)
        session.messages.extend(turn.results.values())
        turn.pending, turn.results = {}, {}

    async def _settle(self, session: Session, turn: _Turn, why: str) -> None:
        """After an abort or a failure: keep the partial reply out of context and pair every call."""
        try:
            if turn.partial is not None and (turn.partial.text or turn.partial.thinking):
                stop = "aborted" if why == "aborted" else "error"
                partial = turn.partial.message(stop, why, self.provider.name, self.model)
                await self._append(session, "message", message_to_dict(partial))
            turn.partial = None
            reason = INTERRUPTED if why == "aborted" else f"Not run: the turn failed ({why})."
            for call in list(turn.pending.values()):
                await self._record_result(session, turn, call, ToolResult(reason, is_error=True), 0.0)
        except Exception as exc:  # the store itself may be what failed; say so and keep the cache sane
            self.emit(ErrorEvent(f"could not record the end of the turn: {exc}", "unknown"), session.id)
        session.messages = repair([*session.messages, *turn.results.values()])
        turn.pending, turn.results = {}, {}

    # --- recording --------------------------------------------------------------------------

    async def _append(self, session: Session, type: EntryType, payload: Mapping[str, Any]) -> None:
        await self.store.append(session.id, type, self.redactor.payload(payload))

    async def _record_message(self, session: Session, message: Message) -> None:
        await self._append(session, "message", message_to_dict(message))
        if not isinstance(message, AssistantMessage) or message.replayable:
            session.messages.append(message)

    # --- commands and shell -----------------------------------------------------------------

    async def _run_command(self, session: Session, name: str, args: str) -> TurnOutcome:
        command = self.commands.get(name)
        if command is None:
            text = f"unknown command /{name}.{did_you_mean(name, self.commands)} Type /help for the list."
            result = CommandResult(text, is_error=True)
        elif command.local_only and not self.local:
            result = CommandResult(f"/{name} only works in a local terminal", is_error=True)
        else:
            try:
                value = command.handler(CommandContext(AgentHandle(self), session, self.local), args)
                if inspect.isawaitable(value):
                    value = await value
                result = value if isinstance(value, CommandResult) else CommandResult(str(value or ""))
            except CrabError as exc:
                result = CommandResult(str(exc), is_error=True)
            except Exception as exc:
                result = CommandResult(f"/{name} failed: {type(exc).__name__}: {exc}", is_error=True)
        self.emit(CommandOutput(name, result.text, result.is_error), session.id)
        return TurnOutcome(
            stop="command",
            text=result.text,
            error=result.text if result.is_error else None,
            session_id=session.id,
            quit=result.quit,
            switch_session=result.switch_session,
        )

    async def _run_shell(self, session: Session, command: str) -> TurnOutcome:
        from crab.loop.shell import run_shell_command

        if not self.local:
            result = CommandResult("!commands only run from a local terminal", is_error=True)
        elif self.config.get("crab.permissions") == "read-only":
            result = CommandResult("!commands are refused in read-only mode (--read-only)", is_error=True)
        else:
            result = await run_shell_command(command, session.workspace, self.tool_timeout)
        self.emit(CommandOutput("!", result.text, result.is_error), session.id)
        return TurnOutcome(stop="command", text=result.text, error=result.text if result.is_error else None)
