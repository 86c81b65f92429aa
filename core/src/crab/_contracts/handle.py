"""The narrow handle commands, channels and lifecycle hooks get instead of the whole ``Agent``
(``AgentHandle``, a Protocol the loop implements), ``SessionView``, what a caller may read of a
session, and what acting through a handle gives back (``TurnOutcome``, ``ChildOutcome``)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from crab._contracts.events import TurnStop
from crab._contracts.messages import Usage

if TYPE_CHECKING:
    from crab._contracts.commands import Command
    from crab._contracts.config import Config
    from crab._contracts.events import Event
    from crab._contracts.images import ImagePart
    from crab._contracts.messages import AssistantMessage, Message
    from crab._contracts.providers import ModelInfo
    from crab._contracts.storage import Entry, SessionInfo
    from crab._contracts.tools import Tool, ToolContext


class SessionView(Protocol):
    """What a command or channel may read of a live session; pass it back to the handle to act on it."""

    @property
    def id(self) -> str: ...

    @property
    def info(self) -> SessionInfo: ...

    @property
    def workspace(self) -> Path: ...

    @property
    def messages(self) -> Sequence[Message]: ...


@dataclass(frozen=True, slots=True)
class PluginStatus:
    """One plugin as ``/plugins`` and ``crab plugins list`` show it; ``reason`` explains a failure."""

    name: str
    status: str
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ChildOutcome:
    """How a child session's turn ended (``AgentHandle.run_child``): its session, final answer,
    stop and error, the usage it spent (already counted in the parent's turn), the tools it
    called in order, and how many model replies it took."""

    session_id: str
    label: str
    text: str
    stop: TurnStop
    error: str | None = None
    usage: Usage | None = None
    tools_called: tuple[str, ...] = ()
    model_calls: int = 0


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """How one turn ended, what the model finally said, and what it cost."""

    stop: TurnStop
    text: str = ""
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    turn_id: str = ""
    session_id: str = ""
    tool_calls: int = 0
    quit: bool = False
    switch_session: str | None = None
    clear_screen: bool = False


@runtime_checkable
class AgentHandle(Protocol):
    """A narrow view of one agent for commands, channels, tools (``ToolContext.handle``) and the
    startup/shutdown hooks: every member a plugin may use, typed. The loop implements it
    (``crab/_loop/handle.py``); a plugin's test gets one from ``AgentHarness.handle``.
    ``isinstance(x, crab.AgentHandle)`` checks that ``x`` has every member.
    """

    # --- what the run is ------------------------------------------------------------------

    @property
    def config(self) -> Config:
        """The validated configuration of this run (read it; changing it changes nothing)."""

    @property
    def local(self) -> bool:
        """Whether input comes from the user's own machine (only then may ``!shell`` run)."""

    @property
    def workspace(self) -> Path: ...

    @property
    def provider_name(self) -> str:
        """The run's provider (a session ``/model`` switched talks to ``session_model``'s)."""

    @property
    def model(self) -> str:
        """The run's model id (a session ``/model`` switched talks to ``session_model``'s)."""

    def session_model(self, session: SessionView) -> str:
        """``provider/model`` that ``session``'s next request goes to."""

    def model_info(self, session: SessionView) -> ModelInfo | None:
        """What the provider says of ``session``'s model (context window, prices); None when it
        does not list it."""

    def models(self, session: SessionView | None = None) -> list[str]:
        """Every ``provider/model`` ``set_model`` accepts: the run's (and ``session``'s) model
        first, then what each loaded provider lists."""

    @property
    def store_name(self) -> str: ...

    @property
    def tools(self) -> Mapping[str, Tool]:
        """Every tool the model can use, by name."""

    @property
    def commands(self) -> Mapping[str, Command]:
        """Every router command, by name."""

    def plugins(self) -> list[PluginStatus]:
        """Every plugin's status, in load order."""

    def collect(self, hook: str) -> list[tuple[str, Any]]:
        """(plugin, value) from every plugin implementing ``hook``, a registration hook core leaves
        for plugins to collect (``crab_skill_dirs``); called with this run's config, through the
        dispatcher (a failing implementation fails its plugin, reported once). ``ValueError`` for
        any other hook."""

    # --- acting -----------------------------------------------------------------------------

    def notice(self, message: str, level: str = "info") -> None:
        """Emit a ``NoticeEvent`` (``level`` "info" or "warning"); renderers show it."""

    def subscribe(self, listener: Callable[[Event], None], *, session: SessionView | None = None) -> Callable[[], None]:
        """Receive every event (a channel renders them), or with ``session`` only that session's
        (a chat that streams its own reply); returns the function that unsubscribes."""

    async def handle_input(
        self, session: SessionView, text: str, *, steer: bool = False, images: Sequence[ImagePart] = ()
    ) -> TurnOutcome:
        """Route one line of input (a command, ``!shell`` on local channels, or a model turn);
        ``images`` go with a model turn (a photo a chat received), capped like every image."""

    def abort(self, session: SessionView) -> bool:
        """Stop the running turn of ``session``; False when nothing was running."""

    def add_tools(self, plugin: str, tools: Sequence[Tool]) -> list[str]:
        """Register tools ``plugin`` learnt of only while starting (from ``crab_startup``) in the one
        registry, gate, hooks and timeouts included; a taken name is left out and reported as
        ``plugin``'s fault. Returns the names added."""

    async def run_child(
        self,
        ctx: ToolContext,
        prompt: str,
        *,
        label: str,
        tools: Collection[str] | None = None,
        instructions: str | None = None,
        model: str | None = None,
        max_iterations: int | None = None,
        read_only: bool = False,
        state: Mapping[str, Any] | None = None,
        title: str | None = None,
        workspace: Path | None = None,
    ) -> ChildOutcome:
        """Run ``prompt`` as one turn of a new session, the child of the tool call ``ctx`` is for
        (its ``meta`` names the parent session and call; ``crab sessions show`` lists it there).

        ``tools``: the registry's tools it may use (None: all; unknown names ignored), minus those
        that write or run commands when ``read_only``; ``instructions``: text after the system
        prompt; ``model``: ``provider/model`` or a model of this provider (None: this one's);
        ``max_iterations``: its cap (None: ``[crab] max_iterations``); ``state``: its initial
        ``ToolContext.state``; ``workspace``: an existing folder its tools and sandbox work in
        (None: ``ctx.workspace``; the caller makes and removes it). ``crab.ConfigError`` for a
        model the provider refuses or a workspace that is no folder.

        It runs under this agent's gate and mode, never more; its questions go through ``ctx.ask``
        and ``ctx.question``, prefixed ``[label]``, one at a time. Its events reach the parent's
        stream as ``ChildEvent``s, its usage the parent's turn. Cancelling the calling tool ends
        its turn with every call paired; at its end the session ends (``crab_session_end``,
        reason ``"child"``).
        """

    async def complete(
        self,
        session: SessionView | str,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        max_tokens: int | None = None,
    ) -> AssistantMessage:
        """Ask this agent's model once, without tools, for ``session`` (a ``SessionView``, or the
        ``session_id`` of a ``ToolContext`` whose turn runs; else ``CrabError``), through the loop's
        one model-call path, its usage joining the running turn's. A refusal or failure is a reply
        with ``stop_reason="error"`` and ``error``. The caller owns the user's consent: crab does not ask.
        """

    # --- sessions ---------------------------------------------------------------------------

    async def new_session(self, title: str | None = None, *, meta: Mapping[str, Any] | None = None) -> SessionView:
        """A new, empty session of this workspace (``meta``: the store's session meta, e.g. the
        key of a channel's conversation that ``/new`` carries over)."""

    async def set_model(self, session: SessionView, model: str) -> str:
        """Switch ``session`` to ``model`` (``provider/model``, or a model of its provider) from
        its next request on; the switch is stored, so a resume restores it, and the token budget
        and pricing follow the new model. Returns ``provider/model``; ``crab.ConfigError`` (one
        line saying what to do) for a provider or model that is not configured (``models()``)."""

    async def recent_sessions(self, limit: int = 10) -> list[SessionInfo]:
        """This workspace's stored sessions, most recently updated first (``/resume`` lists them)."""

    async def resume(self, session_id: str) -> SessionView:
        """A stored session, its context repaired; ``StoreError`` when there is none."""

    async def latest_session(self) -> SessionView | None:
        """The most recent session of this workspace, or None."""

    async def session_for(self, channel: str, address: str, *, session_id: str | None = None) -> SessionView:
        """The session of conversation ``address`` (a chat id) on ``channel``: the stored session
        keyed so (``crab._assembly.channel_host``), resumed, or a new one. Under ``crab serve`` it is kept
        live for the process, and the permission gate asks through the channel's ``ask`` when it
        has one. ``session_id`` moves the conversation to that session (after ``/fork``)."""

    async def end_session(self, session: SessionView) -> None:
        """A channel is done with ``session`` for good (crab-http's one-off request): a channel's
        hold on it is dropped and plugins end what they keep for it (``crab_session_end``, reason
        ``"end"``: its background jobs); its entries stay in the store (1.6)."""

    async def deliver(self, channel: str, address: str, text: str) -> None:
        """Send ``text`` to ``address`` through ``channel``'s ``deliver`` (a channel ``crab serve``
        runs in this process); ``crab.ChannelError`` says why when it cannot."""

    async def session_info(self, session_id: str) -> SessionInfo:
        """The stored header of a session (usage, entry count, fork origin)."""

    async def entries(self, session_id: str) -> list[Entry]:
        """Every stored entry of a session, oldest first, those before a handoff or compaction
        anchor too (secrets already masked): for a plugin that derives its state from the history,
        as a resumed session must see what the live one saw."""

    async def handoff(self, session: SessionView, name: str, state: Mapping[str, Any] | None = None) -> None:
        """Record a handoff anchor: the model's context starts afresh after it."""

    async def compact(self, session: SessionView, focus: str | None = None) -> bool:
        """Summarise the older history of ``session`` into a compaction anchor now (``/compact``;
        ``focus``: what matters), refused while a turn runs. False when nothing was compacted (a
        ``CompactionEvent`` with ``phase="failed"`` says why a summary failed)."""

    async def fork(self, session_id: str, at: str | None = None) -> SessionInfo:
        """A new session branched from ``session_id`` (at entry ``at``, else at its end)."""
