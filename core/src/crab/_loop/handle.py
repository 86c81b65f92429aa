"""``LoopHandle``: the loop's implementation of the ``crab.AgentHandle`` Protocol over one ``Agent``
(what each member does is documented on the Protocol, ``crab/_contracts/handle.py``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from crab._contracts.errors import ChannelError, CrabError
from crab._contracts.handle import ChildOutcome, PluginStatus, SessionView, TurnOutcome
from crab._contracts.messages import AssistantMessage
from crab._contracts.providers import ModelRequest
from crab._host.dispatch import ModelCallRefused

if TYPE_CHECKING:
    from crab._contracts.commands import Command
    from crab._contracts.config import Config
    from crab._contracts.events import Event
    from crab._contracts.images import ImagePart
    from crab._contracts.messages import Message
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
        from crab._loop.child import run_child

        return await run_child(self._agent, ctx, prompt, **options)

    async def complete(
        self,
        session: SessionView | str,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        max_tokens: int | None = None,
    ) -> AssistantMessage:
        agent = self._agent
        live = next((s for s in agent.busy if s.id == session), None) if isinstance(session, str) else _session(session)
        if live is None:
            raise CrabError(f"no turn of session {session!r} is running here, so nothing can be counted against it")
        calls = agent.context.calls
        choice = agent.model_for(live)  # the session's model: /model may have switched it
        request = ModelRequest(
            model=choice.model,
            system=system or "",
            messages=tuple(messages),
            max_tokens=max_tokens,
            temperature=agent.context.settings.temperature,
        )
        try:
            request = await calls.prepare(live, request)
        except ModelCallRefused as exc:
            return AssistantMessage(
                content="", stop_reason="error", error=str(exc), provider=choice.provider.name, model=choice.model
            )
        message = (await calls.send(live, request, purpose="plugin", choice=choice)).message
        if message.usage is not None:
            live.side_usage = live.side_usage + message.usage  # joins the running turn's usage
        return message

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
        served = self._agent.channel_host
        if served is not None:
            return await served.session_for(channel, address, session_id=session_id)
        if session_id is not None:
            return await self._agent.resume(session_id)
        return await self._agent.sessions.keyed(channel, address)

    async def end_session(self, session: SessionView) -> None:
        if self._agent.channel_host is not None:
            self._agent.channel_host.release(_session(session))
        await self._agent.leave(_session(session), "end")

    async def deliver(self, channel: str, address: str, text: str) -> None:
        if self._agent.channel_host is None:
            raise ChannelError(f"cannot deliver to {channel!r}: channels run only inside `crab serve`")
        await self._agent.channel_host.deliver(channel, address, text)

    async def session_info(self, session_id: str) -> SessionInfo:
        return await self._agent.store.get_session(session_id)

    async def entries(self, session_id: str) -> list[Entry]:
        return await self._agent.store.entries(session_id)

    async def handoff(self, session: SessionView, name: str, state: Mapping[str, Any] | None = None) -> None:
        live = _session(session)
        payload = {"name": name, "kind": "handoff", "state": dict(state or {})}
        await self._agent.recorder.append(live, "anchor", payload)
        live.messages = []
        live.handoff = payload

    async def compact(self, session: SessionView, focus: str | None = None) -> bool:
        live = _session(session)
        if live.busy:
            raise CrabError("a turn is running: wait for it to end (or /abort it), then compact")
        return await self._agent.context.compact(live, "manual", focus or None) is not None

    async def fork(self, session_id: str, at: str | None = None) -> SessionInfo:
        return await self._agent.store.fork(session_id, at)
