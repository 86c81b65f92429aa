"""``LoopHandle``: the loop's implementation of the ``crab.AgentHandle`` Protocol over one ``Agent``
(what each member does is documented on the Protocol, ``crab/_contracts/handle.py``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from crab._contracts.errors import CrabError
from crab._contracts.handle import ChildOutcome, PluginStatus, SessionView, TurnOutcome

if TYPE_CHECKING:
    from crab._contracts.commands import Command
    from crab._contracts.config import Config
    from crab._contracts.events import Event
    from crab._contracts.images import ImagePart
    from crab._contracts.messages import AssistantMessage, Message
    from crab._contracts.providers import ModelInfo
    from crab._contracts.storage import Entry, SessionInfo
    from crab._contracts.tools import Tool, ToolContext
    from crab._loop.agent import Agent
    from crab._loop.session import Session


def _session(view: SessionView) -> Session:
    return cast("Session", view)  # every SessionView a handle hands out is the loop's Session


class LoopHandle:
    """An ``AgentHandle`` over ``agent``: commands, channels and lifecycle hooks get one, never the
    ``Agent``. Only the members the Protocol names exist (no forwarding of other attributes)."""

    __slots__ = ("_agent", "_turns")

    def __init__(self, agent: Agent) -> None:
        self._agent = agent
        self._turns: list[TurnOutcome] | None = None
        """A command's handle keeps the outcomes of the turns it ran (the last is its answer);
        None on the long-lived handles of channels and lifecycle hooks, which keep nothing."""

    @property
    def config(self) -> Config:
        return self._agent.config

    @property
    def local(self) -> bool:
        return self._agent.local

    @property
    def workspace(self) -> Path:
        return self._agent.workspace

    @property
    def provider_name(self) -> str:
        return self._agent.provider.name

    @property
    def model(self) -> str:
        return self._agent.model

    def session_model(self, session: SessionView) -> str:
        return self._agent.model_for(_session(session)).name

    def model_info(self, session: SessionView) -> ModelInfo | None:
        return self._agent.model_for(_session(session)).info

    def models(self, session: SessionView | None = None) -> list[str]:
        return self._agent.models.configured(None if session is None else _session(session))

    @property
    def store_name(self) -> str:
        return self._agent.store.name

    @property
    def tools(self) -> Mapping[str, Tool]:
        return dict(self._agent.tools)

    @property
    def commands(self) -> Mapping[str, Command]:
        return dict(self._agent.commands)

    def plugins(self) -> list[PluginStatus]:
        return [PluginStatus(r.name, r.status, r.reason) for r in self._agent.host.records.values()]

    def collect(self, hook: str) -> list[tuple[str, Any]]:
        from crab._host.collect import collect_from

        return collect_from(self._agent.host, hook, self._agent.config)

    def notice(self, message: str, level: str = "info") -> None:
        self._agent.notice(message, level)

    def subscribe(self, listener: Callable[[Event], None], *, session: SessionView | None = None) -> Callable[[], None]:
        return self._agent.subscribe(listener, None if session is None else session.id)

    async def handle_input(
        self, session: SessionView, text: str, *, steer: bool = False, images: Sequence[ImagePart] = ()
    ) -> TurnOutcome:
        outcome = await self._agent.handle_input(_session(session), text, steer=steer, images=images)
        if self._turns is not None and outcome.stop != "command":
            self._turns.append(outcome)
        return outcome

    def abort(self, session: SessionView) -> bool:
        return self._agent.abort(_session(session))

    def add_tools(self, plugin: str, tools: Sequence[Tool]) -> list[str]:
        return self._agent.host.add_tools(plugin, tools)

    async def run_child(self, ctx: ToolContext, prompt: str, **options: Any) -> ChildOutcome:
        return await self._agent.run_child(ctx, prompt, **options)

    async def complete(
        self,
        session: SessionView | str,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        max_tokens: int | None = None,
    ) -> AssistantMessage:
        target: Session | str = session if isinstance(session, str) else _session(session)
        return await self._agent.complete(target, messages, system=system, max_tokens=max_tokens)

    async def new_session(self, title: str | None = None, *, meta: Mapping[str, Any] | None = None) -> SessionView:
        return await self._agent.new_session(title, meta)

    async def set_model(self, session: SessionView, model: str) -> str:
        return (await self._agent.models.set(_session(session), model)).name

    async def recent_sessions(self, limit: int = 10) -> list[SessionInfo]:
        return await self._agent.recent_sessions(limit)

    async def resume(self, session_id: str) -> SessionView:
        return await self._agent.resume(session_id)

    async def latest_session(self) -> SessionView | None:
        return await self._agent.latest_session()

    async def session_for(self, channel: str, address: str, *, session_id: str | None = None) -> SessionView:
        return await self._agent.session_for(channel, address, session_id=session_id)

    async def end_session(self, session: SessionView) -> None:
        await self._agent.end_session(_session(session))

    async def deliver(self, channel: str, address: str, text: str) -> None:
        await self._agent.deliver(channel, address, text)

    async def session_info(self, session_id: str) -> SessionInfo:
        return await self._agent.store.get_session(session_id)

    async def entries(self, session_id: str) -> list[Entry]:
        return await self._agent.store.entries(session_id)

    async def handoff(self, session: SessionView, name: str, state: Mapping[str, Any] | None = None) -> None:
        await self._agent.handoff(_session(session), name, state)

    async def compact(self, session: SessionView, focus: str | None = None) -> bool:
        live = _session(session)
        if live.busy:
            raise CrabError("a turn is running: wait for it to end (or /abort it), then compact")
        return await self._agent.context.compact(live, "manual", focus or None) is not None

    async def fork(self, session_id: str, at: str | None = None) -> SessionInfo:
        return await self._agent.store.fork(session_id, at)
