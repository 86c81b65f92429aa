"""The agent: sessions, input routing (command, ``!shell`` or a turn) and queues, abort, and ``emit``,
the one place events are delivered (docs/architecture.md#the-agent-and-the-turn)."""

from __future__ import annotations

import asyncio
import inspect
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crab._config.layers import Config
from crab._config.paths import live_home
from crab._contracts.commands import Command, CommandContext, CommandResult
from crab._contracts.config_tables import DEFAULT_MAX_IMAGE_BYTES, DEFAULT_MAX_IMAGE_SIDE
from crab._contracts.errors import ChannelError, CrabError, UsageError
from crab._contracts.events import CommandOutput, Event, NoticeEvent
from crab._contracts.handle import ChildOutcome
from crab._contracts.images import ImagePart
from crab._contracts.interception import Answer, AskUser, PermissionRequest, redacted_ask
from crab._contracts.messages import AssistantMessage, Message, ToolCall
from crab._contracts.providers import ModelInfo, ModelRequest, Provider
from crab._contracts.questions import AskQuestion, redacted_question
from crab._contracts.storage import SessionInfo, Store
from crab._contracts.tools import Tool, ToolContext
from crab._host.dispatch import Failure, ModelCallRefused
from crab._host.plugin_host import PluginHost
from crab._loop import compaction
from crab._loop.budget import DEFAULT_CONTEXT_WINDOW, TokenBudget
from crab._loop.compaction import Compacted, CompactionReason, handoff_note
from crab._loop.handle import LoopHandle as AgentHandle
from crab._loop.history import load_history
from crab._loop.images import ImageLimits
from crab._loop.model_call import ModelCalls
from crab._loop.model_choice import ModelChoice, choice_of, configured_models, model_entry, resolve, stored_choice
from crab._loop.recorder import PARENT_SESSION_META, Recorder
from crab._loop.router import did_you_mean, route
from crab._loop.session import QueuedInput, Session, TurnOutcome
from crab._loop.turn import LoopSettings, Turn, TurnParts
from crab._secrets.keys import known_secrets
from crab._secrets.redaction import EventRedactor, Redactor
from crab._system.live_sessions import no_turn_running, turn_running

if TYPE_CHECKING:
    from crab._loop.channel_host import ChannelHost

Listener = Callable[[Event], None]
LATEST_SCAN = 50
"""Sessions ``latest_session`` looks through for the latest one that is not a child session."""


class Agent:
    """Runs turns for sessions of one store with one provider and model.

    ``ask`` is how the active channel asks the user for permission (None: nobody can answer,
    so the gate refuses); ``question`` how it asks the user a tool's question (None: nobody can
    answer, so such a tool says so at once). ``local`` is False for remote channels, which may not
    run ``!shell``.
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
        question: AskQuestion | None = None,
    ) -> None:
        self.host = host
        self.config = config
        self.store = store
        self.provider = provider
        self.model = model
        self.workspace = workspace
        self.ask = ask
        self.question = question
        self.local = local
        self.busy: set[Session] = set()
        """Sessions with a turn running or queued (``crab serve`` waits for them on SIGTERM)."""
        self.channel_host: ChannelHost | None = None
        """The channels ``crab serve`` runs (delivery, keyed sessions); None elsewhere."""
        self.max_iterations = int(config.get("crab.max_iterations", 25))
        self.tool_timeout = float(config.get("crab.tool_timeout", 120.0))
        self.max_tokens: int | None = config.get("crab.max_tokens")
        self.temperature: float | None = config.get("crab.temperature")
        self.image_limits = ImageLimits(
            int(config.get("crab.max_image_bytes", DEFAULT_MAX_IMAGE_BYTES)),
            int(config.get("crab.max_image_side", DEFAULT_MAX_IMAGE_SIDE)),
        )
        self.keyboard = False  # True when a person types each input (interactive chat): see loop/shell.py
        self.redactor = Redactor(known_secrets(config))
        self.outgoing = EventRedactor(self.redactor)
        self.recorder = Recorder(store, self.redactor)
        """The one writer of this agent's entries (``crab._loop.recorder``)."""
        self._listeners: list[Listener] = []
        self._session_listeners: dict[str, list[Listener]] = {}
        self._default_model: ModelChoice | None = None
        self._unsubscribe_failures: Callable[[], None] | None = None
        self._turn_parts: TurnParts | None = None
        self._open: weakref.WeakSet[Session] = weakref.WeakSet()
        """Sessions opened here and not left yet: each gets ``crab_session_end`` at ``close``
        (weak: one a caller dropped without leaving ends with ``crab_shutdown`` instead)."""

    # --- registries and lifecycle ---------------------------------------------------------

    @property
    def tools(self) -> dict[str, Tool]:
        return self.host.registry("tools")

    @property
    def commands(self) -> dict[str, Command]:
        return self.host.registry("commands")

    def default_model(self) -> ModelChoice:
        """The run's provider and model (what a session talks to until ``/model`` switches it)."""
        if self._default_model is None:
            self._default_model = choice_of(self.provider, self.model)
        return self._default_model

    def model_for(self, session: Session | None = None) -> ModelChoice:
        """The provider and model ``session`` talks to (without one: the run's)."""
        if session is not None and session.model is not None:
            return session.model
        return self.default_model()

    def model_info(self, session: Session | None = None) -> ModelInfo | None:
        return self.model_for(session).info

    def configured_models(self, session: Session | None = None) -> list[str]:
        """Every ``provider/model`` ``/model`` may switch to: the run's, the session's, then what
        each loaded provider lists."""
        return configured_models(self.host.registry("providers"), self.default_model(), self.model_for(session))

    async def set_model(self, session: Session, spec: str) -> ModelChoice:
        """Switch ``session`` to ``spec`` (``provider/model``, or a model of its provider) for its
        next request on, recorded in the store so a resume restores it; the token budget follows
        the new model's window and each call is priced at its prices. ``ConfigError`` (one line
        saying what to do) for a provider or model that is not configured."""
        choice = resolve(spec, self.host.registry("providers"), self.model_for(session), self.default_model())
        await self.recorder.append(session, "event", model_entry(choice))
        session.model = choice
        session.budget = None  # made again at the next request, against the new window
        return choice

    def _restore_model(self, session: Session, stored: tuple[str, str] | None) -> None:
        """Give a resumed session the model its last recorded switch chose, when that is still loaded."""
        if stored is None:
            return
        name, model = stored
        default = self.default_model()
        if (name, model) == (default.provider.name, default.model):
            return
        provider = self.host.registry("providers").get(name)
        why = f"provider {name} is not loaded" if provider is None else ""
        if provider is not None:
            try:
                provider.check(model)
            except CrabError as exc:
                why = str(exc)
        if why:
            note = f"session {session.id} was switched to {name}/{model}, but {why}: using {default.name}"
            self.notice(note, "warning")
            return
        assert provider is not None
        session.model = choice_of(provider, model)

    async def start(self) -> None:
        """Run every registration hook, open the store, report every plugin failure so far (and
        each later one, as it happens) as a warning notice, then run ``crab_startup``."""
        self.host.collect_all()
        await self.store.open()
        if self._unsubscribe_failures is None:
            self._unsubscribe_failures = self.host.dispatch.subscribe(self._report_failure)
        await self.host.dispatch.lifecycle("crab_startup", agent=AgentHandle(self))

    async def close(self) -> None:
        """Run ``crab_session_end`` for each session still open, then ``crab_shutdown``, and close
        the store; failures are reported, never raised (except ``PluginError`` in strict mode,
        after the store is closed)."""
        try:
            ended: set[str] = set()
            for session in list(self._open):
                if session.id in ended:  # a stray second object of one session (/new made it)
                    self._open.discard(session)
                    continue
                ended.add(session.id)
                await self.leave(session, "shutdown")
            await self.host.dispatch.lifecycle("crab_shutdown", agent=AgentHandle(self))
        finally:
            try:
                await self.store.close()
            except Exception as exc:
                self.notice(f"closing the {self.store.name} store failed: {exc}", "warning")
            if self._unsubscribe_failures is not None:
                self._unsubscribe_failures()
                self._unsubscribe_failures = None

    def _report_failure(self, failure: Failure) -> None:
        self.notice(failure.line, "warning")

    # --- events -----------------------------------------------------------------------------

    def subscribe(self, listener: Listener, session_id: str | None = None) -> Callable[[], None]:
        """Receive every event (or only those of ``session_id``); returns a function that unsubscribes."""
        listeners = self._listeners if session_id is None else self._session_listeners.setdefault(session_id, [])
        listeners.append(listener)

        def unsubscribe() -> None:
            if listener in listeners:
                listeners.remove(listener)
            if session_id is not None and not listeners:
                self._session_listeners.pop(session_id, None)

        return unsubscribe

    def emit(self, event: Event, session_id: str = "") -> None:
        """The one delivery point: secrets masked and text made valid UTF-8 (``crab._secrets.redaction``), then
        every listener and ``crab_event`` observer."""
        for shown in self.outgoing.events(event, session_id):
            self._deliver(shown, session_id)

    def _deliver(self, event: Event, session_id: str) -> None:
        scoped = self._session_listeners.get(session_id, []) if session_id else []
        for listeners in (self._listeners, scoped):
            for listener in list(listeners):
                try:
                    listener(event)
                except Exception as exc:  # a broken renderer must not end the turn
                    if listener in listeners:
                        listeners.remove(listener)
                    self.notice(f"a renderer failed and was detached: {type(exc).__name__}: {exc}", "warning")
        self.host.dispatch.observe("crab_event", event=event, session_id=session_id)

    def notice(self, message: str, level: str = "info") -> None:
        self.emit(NoticeEvent(message, "warning" if level == "warning" else "info"))

    # --- sessions ---------------------------------------------------------------------------

    async def new_session(self, title: str | None = None, meta: Mapping[str, Any] | None = None) -> Session:
        info = await self.store.create_session(str(self.workspace), title=title, meta=meta)
        return self.opened(Session(info=info, workspace=self.workspace))

    def opened(self, session: Session) -> Session:
        """Count ``session`` as open here (``leave`` or ``close`` ends it); returns it."""
        self._open.add(session)
        return session

    async def leave(self, session: Session, reason: str = "switch") -> None:
        """The agent is done with ``session``: ``crab_session_end`` ends what plugins keep
        running for it (background jobs); its entries stay in the store. Once per session."""
        if session not in self._open:
            return
        self._open.discard(session)
        await self.host.dispatch.lifecycle(
            "crab_session_end", agent=AgentHandle(self), session_id=session.id, reason=reason
        )

    async def end_session(self, session: Session) -> None:
        """``AgentHandle.end_session``: no channel keeps ``session`` live any more, and it is left."""
        if self.channel_host is not None:
            self.channel_host.release(session)
        await self.leave(session, "end")

    async def switch(self, session: Session, session_id: str) -> Session:
        """Move from ``session`` to the stored ``session_id`` (``CommandResult.switch_session``):
        the new one is resumed first (a ``StoreError`` leaves the old one as it was), then the
        old one is left."""
        if session_id == session.id:
            return session
        resumed = await self.resume(session_id)
        await self.leave(session, "switch")
        return resumed

    async def resume(self, session_id: str) -> Session:
        """Load a stored session and repair what will go to the provider.

        A tool call the store holds no result for (crab was killed while it ran) gets its
        stand-in result stored now, once, so the stored session pairs every call too, and so
        does every child session such a call started (``Recorder.pair_after_crash``).
        """
        # Read and repair holding the session's lock alone: a call with no result whose turn still
        # runs in another process (or task) gets its real result there, so none is stored here.
        with no_turn_running(live_home(), session_id) as alone:
            info = await self.store.get_session(session_id)
            entries = await self.store.entries(session_id, since_handoff=True)
            history = load_history(entries)
            workspace = Path(info.workspace) if info.workspace else self.workspace
            if alone:  # a call killed while it ran a child session left that child open too
                await self.recorder.pair_after_crash(session_id, str(workspace), history.missing)
        if history.skipped:
            self.notice(f"{history.skipped} unreadable entries in session {session_id} were left out", "warning")
        session = Session(
            info=info,
            workspace=workspace,
            messages=history.messages,
            handoff=dict(history.handoff) if history.handoff else None,
            shared=not alone,
        )
        self._restore_model(session, stored_choice(entries))
        return self.opened(session)

    async def recent_sessions(self, limit: int = 10) -> list[SessionInfo]:
        """This workspace's sessions, most recently updated first."""
        return await self.store.list_sessions(str(self.workspace), limit=limit)

    async def latest_session(self) -> Session | None:
        """The most recently updated session of this workspace, resumed; None if there is none.
        A child session (one a tool call started, ``crab._loop.child``) is its parent's part, not
        a conversation to continue: the latest of the last few that is not one."""
        sessions = await self.store.list_sessions(str(self.workspace), limit=LATEST_SCAN)
        own = [info for info in sessions if not (info.meta or {}).get(PARENT_SESSION_META)]
        chosen = own[0] if own else (sessions[0] if sessions else None)
        return await self.resume(chosen.id) if chosen is not None else None

    async def session_for(self, channel: str, address: str, *, session_id: str | None = None) -> Session:
        """The session of conversation ``address`` on ``channel`` (``AgentHandle.session_for``)."""
        if self.channel_host is not None:
            return await self.channel_host.session_for(channel, address, session_id=session_id)
        if session_id is not None:
            return await self.resume(session_id)
        from crab._loop.channel_host import open_keyed_session

        return await open_keyed_session(self, channel, address)

    async def deliver(self, channel: str, address: str, text: str) -> None:
        """Send ``text`` through a channel ``crab serve`` runs here (``AgentHandle.deliver``)."""
        if self.channel_host is None:
            raise ChannelError(f"cannot deliver to {channel!r}: channels run only inside `crab serve`")
        await self.channel_host.deliver(channel, address, text)

    # --- token budget and compaction -----------------------------------------------------------

    def known_context_window(self, session: Session | None = None) -> int | None:
        """Tokens the model (``session``'s, else the run's) reads: ``[crab] context_window``, else
        the provider's model info, else None (the budget assumes ``DEFAULT_CONTEXT_WINDOW``; a
        status line shows no share)."""
        configured = self.config.get("crab.context_window")
        if configured:
            return int(configured)
        info = self.model_info(session)
        return info.context_window if info is not None and info.context_window else None

    def context_window(self, session: Session | None = None) -> int:
        """The window the token budget measures against: ``known_context_window`` or
        ``DEFAULT_CONTEXT_WINDOW``."""
        return self.known_context_window(session) or DEFAULT_CONTEXT_WINDOW

    def budget(self, session: Session) -> TokenBudget:
        """The session's token budget (made on first use, again after ``/model``; its correction
        is learned per call)."""
        if session.budget is None:
            session.budget = TokenBudget(self.context_window(session), float(self.config.get("crab.compact_at", 0.8)))
        return session.budget

    async def compact(self, session: Session, reason: CompactionReason, focus: str | None = None) -> Compacted | None:
        """Summarise older history into a compaction anchor and keep the recent turns verbatim.

        None when there was nothing older to summarise or the summary failed (a ``CompactionEvent``
        with ``phase="failed"`` says why; by hand, nothing to summarise yet has no event). Each
        summarising call is priced and reported with one ``UsageEvent``. Raises only on
        cancellation (or ``PluginError`` in strict mode).
        """
        async with session.compacting:
            # The request a turn would send next (``Turn._request``): the summary reuses its prefix.
            await self.recorder.load_images(session)
            tools = self.tools
            base = ModelRequest(
                model=self.model_for(session).model,
                system=await self.system_prompt(session),
                messages=tuple(session.messages),
                tools=tuple(tool.spec() for tool in tools.values()),
                max_tokens=self.max_tokens,
                temperature=self.temperature,
            )
            return await compaction.compact(
                session,
                reason,
                focus,
                budget=self.budget(session),
                calls=self.turn_parts().calls,
                base=base,
                tools=tools,
            )

    async def complete(
        self,
        session: Session | str,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        max_tokens: int | None = None,
    ) -> AssistantMessage:
        """One model call a plugin makes for ``session`` (a live session, or the id of one whose
        turn is running), through the one path every call takes (``crab_before_model_call``, the
        recorded ``model_call`` event, one priced ``UsageEvent``), without tools; its usage joins
        the running turn's. A failure is the reply's ``stop_reason="error"`` with ``error``."""
        live = session if isinstance(session, Session) else next((s for s in self.busy if s.id == session), None)
        if live is None:
            raise CrabError(f"no turn of session {session!r} is running here, so nothing can be counted against it")
        calls = self.turn_parts().calls
        choice = self.model_for(live)  # the session's model: /model may have switched it
        request = ModelRequest(
            model=choice.model,
            system=system or "",
            messages=tuple(messages),
            max_tokens=max_tokens,
            temperature=self.temperature,
        )
        try:
            request = await calls.prepare(live, request)
        except ModelCallRefused as exc:
            return AssistantMessage(
                content="", stop_reason="error", error=str(exc), provider=choice.provider.name, model=choice.model
            )
        message = (await calls.send(live, request, purpose="plugin", choice=choice)).message
        if message.usage is not None:
            live.side_usage = live.side_usage + message.usage
        return message

    def turn_parts(self) -> TurnParts:
        """What this agent's turns run with (made once: the settings are read at construction)."""
        if self._turn_parts is None:
            calls = ModelCalls(
                self.host.dispatch,
                self.model_for,
                emit=self.emit,
                append_entry=self.recorder.append,
                redact=self.redactor.text,
            )
            settings = LoopSettings(
                self.max_iterations, self.tool_timeout, self.max_tokens, self.temperature, self.image_limits
            )
            self._turn_parts = TurnParts(
                settings=settings,
                calls=calls,
                recorder=self.recorder,
                tools=lambda: self.tools,
                system_prompt=self.system_prompt,
                budget=self.budget,
                compact=self.compact,
                tool_context=self.tool_context,
                notice=self.notice,
                known_window=self.known_context_window,
                config=self.config,
            )
        return self._turn_parts

    async def handoff(self, session: Session, name: str, state: Mapping[str, Any] | None = None) -> None:
        """Record a handoff anchor: context for the model starts afresh after it."""
        payload = {"name": name, "kind": "handoff", "state": dict(state or {})}
        await self.recorder.append(session, "anchor", payload)
        session.messages = []
        session.handoff = payload

    # --- input ------------------------------------------------------------------------------

    async def handle_input(
        self, session: Session, text: str, *, steer: bool = False, images: Sequence[ImagePart] = ()
    ) -> TurnOutcome:
        """Route one input. Commands answer at once, even during a turn; model input starts a
        turn, or joins the running one (``steer``) or waits for it (follow-up).

        ``images`` go with model input, each within ``[crab] max_image_bytes`` (downscaled where
        Pillow is importable); one over it raises ``ImageTooLarge`` before anything is recorded.
        """
        routed = route(text)
        fitted = tuple(self.image_limits.fit(image) for image in images)
        if fitted and routed.kind != "model":
            raise UsageError("images go with a message to the model, not with a /command or !shell line")
        if routed.kind == "command":
            return await self._run_command(session, routed.name, routed.args)
        if routed.kind == "shell":
            return await self._run_shell(session, routed.text)
        item = QueuedInput(routed.text, fitted)
        if not session.busy and session.compacting.locked():
            # A /compact is rewriting the context: start after it, so this turn is neither
            # summarised half-way nor dropped from the context the compaction leaves.
            async with session.compacting:
                pass
        if session.busy:
            (session.steering if steer else session.follow_ups).append(item)
            return await item.outcome
        session.follow_ups.appendleft(item)
        session.busy = True
        self.busy.add(session)
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
            self.busy.discard(session)
        return await item.outcome

    def abort(self, session: Session) -> bool:
        """Cancel the running turn of ``session``; False when nothing was running."""
        if session.task is None or session.task.done():
            return False
        session.abort_requested = True
        session.task.cancel()
        return True

    async def _turn(self, session: Session, item: QueuedInput, queue: Any) -> TurnOutcome:
        async with turn_running(live_home(), session.id):  # a resume elsewhere leaves its calls be
            return await Turn(self.turn_parts(), session, item, queue).run()

    async def run_child(self, ctx: ToolContext, prompt: str, **options: Any) -> ChildOutcome:
        """One turn of a new child session of ``ctx``'s call (``AgentHandle.run_child``)."""
        from crab._loop.child import run_child

        return await run_child(self, ctx, prompt, **options)

    # --- context and recording ----------------------------------------------------------------

    async def system_prompt(self, session: Session) -> str:
        """Every plugin's ``crab_system_prompt`` parts (core's default prompt and instruction files
        first), then ``[crab] system_prompt_append``, then the handoff or compaction note, joined by
        blank lines.

        Gathered once per live session and again when a compaction changed its note: the system
        prompt is part of the prefix providers cache, and a plugin part that varied from turn to
        turn (a clock, a git status) would re-bill the whole prompt each turn. So an edited
        instruction file or a plugin's new part applies from the session's next process, resume
        or compaction on (docs/architecture.md, "The request prefix never changes")."""
        note = handoff_note(session.handoff)
        kept = session.system
        if kept is not None and kept[0] == note:
            return kept[1]
        parts = self.host.dispatch.system_prompt(workspace=session.workspace, session_id=session.id, config=self.config)
        appended = self.config.get("crab.system_prompt_append")
        if isinstance(appended, str) and appended.strip():
            parts.append(appended.strip())
        if note:
            parts.append(note)
        text = "\n\n".join(parts)
        session.system = (note, text)
        return text

    def _hooked_ask(self, ask: AskUser | None, session: Session) -> AskUser | None:
        """``ask`` behind the ``crab_permission_request`` hooks: one that answers spares the
        question; where nobody can be asked there is nothing to answer in their stead."""
        if ask is None:
            return None
        user = ask

        async def asking(request: PermissionRequest) -> Answer:
            said = await self.host.dispatch.permission_request(request, session.id, session.workspace)
            if said == "deny":
                return "deny"
            if said == "once":
                return "once"
            return await user(request)

        return asking

    def tool_context(self, session: Session, call: ToolCall, tool: Tool) -> ToolContext:
        """What a tool (or a ``!cmd``) running for ``session`` sees of the agent."""
        return ToolContext(
            session_id=session.id,
            workspace=session.workspace,
            call_id=call.id,
            settings=self.config.plugin_settings(tool.plugin) if tool.plugin else {},
            state=session.state,
            emit=lambda event: self.emit(event, session.id),
            config=self.config,
            ask=self._hooked_ask(
                redacted_ask(session.ask if session.ask is not None else self.ask, self.redactor.text), session
            ),
            local=self.local,
            question=redacted_question(
                session.question if session.question is not None else self.question, self.redactor.text
            ),
            handle=AgentHandle(self),
        )

    # --- commands and shell -----------------------------------------------------------------

    async def _run_command(self, session: Session, name: str, args: str) -> TurnOutcome:
        command = self.commands.get(name)
        handle: AgentHandle | None = None
        if command is None:
            text = f"unknown command /{name}.{did_you_mean(name, self.commands)} Type /help for the list."
            result = CommandResult(text, is_error=True)
        elif command.local_only and not self.local:
            result = CommandResult(f"/{name} only works in a local terminal", is_error=True)
        else:
            handle = AgentHandle(self)
            handle._turns = []  # the turns this command runs (see below)
            try:
                value = command.handler(CommandContext(handle, session, self.local), args)
                if inspect.isawaitable(value):
                    value = await value
                result = value if isinstance(value, CommandResult) else CommandResult(str(value or ""))
            except CrabError as exc:
                result = CommandResult(str(exc), is_error=True)
            except Exception as exc:
                result = CommandResult(f"/{name} failed: {type(exc).__name__}: {exc}", is_error=True)
        self.emit(CommandOutput(name, result.text, result.is_error), session.id)
        turns = (handle._turns or []) if handle is not None else []
        if turns and not result.text and not result.is_error:
            # A command that ran a turn and said nothing itself (/skill:name request) answers with
            # that turn: a channel that shows only the outcome (Telegram, `crab run -o json`) gets
            # the model's answer, not an empty command result.
            return replace(
                turns[-1], quit=result.quit, switch_session=result.switch_session, clear_screen=result.clear_screen
            )
        return TurnOutcome(
            stop="command",
            text=result.text,
            error=result.text if result.is_error else None,
            session_id=session.id,
            quit=result.quit,
            switch_session=result.switch_session,
            clear_screen=result.clear_screen,
        )

    async def _run_shell(self, session: Session, command: str) -> TurnOutcome:
        from crab._loop.shell import shell_input  # the gate decides: see crab/_loop/shell.py

        result = await shell_input(
            self.host,
            command,
            lambda call, tool: self.tool_context(session, call, tool),
            timeout=self.tool_timeout,
            local=self.local,
            keyboard=self.keyboard,
        )
        self.emit(CommandOutput("!", result.text, result.is_error), session.id)
        return TurnOutcome(stop="command", text=result.text, error=result.text if result.is_error else None)
