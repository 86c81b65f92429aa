"""The agent: sessions, input routing (command, ``!shell`` or a turn) and queues, abort, and ``emit``,
the one place events are delivered (docs/architecture.md#the-agent-and-the-turn)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from crab._config.paths import live_home
from crab._contracts.commands import Command, CommandContext, CommandResult
from crab._contracts.config import DEFAULT_MAX_IMAGE_BYTES, DEFAULT_MAX_IMAGE_SIDE, Config
from crab._contracts.errors import CrabError, UsageError
from crab._contracts.events import CommandOutput, Event
from crab._contracts.images import ImagePart
from crab._contracts.interception import AskUser
from crab._contracts.messages import ToolCall
from crab._contracts.providers import Provider
from crab._contracts.questions import AskQuestion
from crab._contracts.storage import Store
from crab._contracts.tools import Tool, ToolContext
from crab._host.dispatch import Failure
from crab._host.plugin_host import PluginHost
from crab._loop.delivery import Delivery
from crab._loop.handle import LoopHandle as AgentHandle
from crab._loop.model_call import ModelCalls
from crab._loop.model_choice import Models
from crab._loop.model_context import LoopSettings, ModelContext
from crab._loop.recorder import Recorder
from crab._loop.session import QueuedInput, Session, TurnOutcome
from crab._loop.sessions import Sessions
from crab._loop.turn import Turn
from crab._secrets.keys import known_secrets
from crab._secrets.redaction import EventRedactor, Redactor
from crab._system.live_sessions import turn_running
from crab._values.images import ImageLimits
from crab._values.router import did_you_mean, route

Listener = Callable[[Event], None]


class ServedChannels(Protocol):
    """What the agent asks of ``crab serve``'s channels when they run in its process: running them
    is composition (``crab._assembly.channel_host.ChannelHost``), the loop only routes to them."""

    engine: Callable[..., Awaitable[Any]] | None
    """The turn engine ``[serve] engine`` names (its turns run there), or None (in this process)."""

    def release(self, session: Session) -> None: ...

    async def engine_turn(self, session: Session, item: QueuedInput, queue: Any) -> TurnOutcome:
        """Run ``item`` on ``engine`` (``crab._assembly.engine_turn``), as ``Turn.run`` would here."""

    async def session_for(self, channel: str, address: str, *, session_id: str | None = None) -> Session: ...

    async def deliver(self, channel: str, address: str, text: str) -> None: ...


class ShellInput(Protocol):
    """Runs one ``!cmd`` a person typed: core's built-in ``crab._builtin.shell.shell_input``, which
    the composition root gives the agent (the loop only routes the line to it)."""

    async def __call__(
        self,
        host: PluginHost,
        command: str,
        make_context: Callable[[ToolCall, Tool], ToolContext],
        *,
        timeout: float,
        local: bool,
        keyboard: bool = False,
    ) -> CommandResult: ...


class Agent:
    """Runs turns for sessions of one store with one provider and model.

    ``ask`` is how the active channel asks the user for permission (None: nobody can answer,
    so the gate refuses); ``question`` how it asks the user a tool's question (None: nobody can
    answer, so such a tool says so at once). ``local`` is False for remote channels, which may not
    run ``!shell``; ``shell`` runs it (None: a ``!`` line is refused).
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
        shell: ShellInput | None = None,
    ) -> None:
        self.host = host
        self.shell = shell
        self.config = config
        self.store = store
        self.provider = provider
        self.model = model
        self.workspace = workspace
        self.local = local
        self.busy: set[Session] = set()
        """Sessions with a turn running or queued (``crab serve`` waits for them on SIGTERM)."""
        self.channel_host: ServedChannels | None = None
        """The channels ``crab serve`` runs (delivery, keyed sessions); None elsewhere."""
        self.keyboard = False  # True when a person types each input (interactive chat): see crab/_builtin/shell.py
        self.redactor = Redactor(known_secrets(config))
        self.outgoing = EventRedactor(self.redactor)
        self.recorder = Recorder(store, self.redactor)
        """The one writer of this agent's entries (``crab._loop.recorder``)."""
        self.delivery = Delivery(host.dispatch, self.outgoing)
        """The one place events are delivered (``crab._loop.delivery``)."""
        self.emit, self.subscribe, self.notice = self.delivery.emit, self.delivery.subscribe, self.delivery.notice
        self.models = Models(provider, model, lambda: host.registry("providers"), self.recorder.append, self.notice)
        """The provider and model each session talks to (``crab._loop.model_choice``)."""
        self.model_for = self.models.model_for
        self._unsubscribe_failures: Callable[[], None] | None = None
        settings = LoopSettings(
            int(config.get("crab.max_iterations", 25)),
            float(config.get("crab.tool_timeout", 120.0)),
            config.get("crab.max_tokens"),
            config.get("crab.temperature"),
            ImageLimits(
                int(config.get("crab.max_image_bytes", DEFAULT_MAX_IMAGE_BYTES)),
                int(config.get("crab.max_image_side", DEFAULT_MAX_IMAGE_SIDE)),
            ),
        )
        redact = self.redactor.text
        calls = ModelCalls(
            host.dispatch, self.model_for, emit=self.emit, append_entry=self.recorder.append, redact=redact
        )
        self.context = ModelContext(
            host,
            config,
            settings,
            calls,
            self.recorder,
            AgentHandle(self),
            redact=redact,
            ask=ask,
            question=question,
            local=local,
        )
        """What this agent's turns are given (``crab._loop.model_context``)."""
        handle = self.context.handle
        sessions = self.sessions = Sessions(
            store, workspace, self.recorder, self.models, host.dispatch, handle, self.notice
        )
        """Opening, resuming and leaving this agent's sessions (``crab._loop.sessions``)."""
        self.new_session, self.opened, self.leave = sessions.new, sessions.opened, sessions.leave
        self.switch, self.resume, self.latest_session = sessions.switch, sessions.resume, sessions.latest
        self.recent_sessions = sessions.recent

    # --- registries and lifecycle ---------------------------------------------------------

    @property
    def tools(self) -> dict[str, Tool]:
        return self.host.registry("tools")

    @property
    def commands(self) -> dict[str, Command]:
        return self.host.registry("commands")

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
            await self.sessions.leave_all()
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
        fitted = tuple(self.context.settings.images.fit(image) for image in images)
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
        served = self.channel_host
        if served is not None and served.engine is not None:
            return await served.engine_turn(session, item, queue)
        async with turn_running(live_home(), session.id):  # a resume elsewhere leaves its calls be
            return await Turn(self.context, session, item, queue).run()

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
        if self.shell is None:
            result = CommandResult("!commands do not run here", is_error=True)
        else:
            result = await self.shell(
                self.host,
                command,
                lambda call, tool: self.context.tool_context(session, call, tool),
                timeout=self.context.settings.tool_timeout,
                local=self.local,
                keyboard=self.keyboard,
            )
        self.emit(CommandOutput("!", result.text, result.is_error), session.id)
        return TurnOutcome(stop="command", text=result.text, error=result.text if result.is_error else None)
