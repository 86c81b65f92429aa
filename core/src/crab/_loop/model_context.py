"""``ModelContext``: what the model of a session is given: its system prompt, the tools offered (and
the full schema a failed call gets when a request carried less), the token budget and compaction,
and the context each tool call runs with. A turn is handed one (the agent's, or a child
session's: ``crab._loop.child``), never the agent."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from crab._contracts.events import Event, NoticeEvent
from crab._contracts.interception import Answer, AskUser, PermissionRequest
from crab._contracts.messages import ToolCall
from crab._contracts.providers import ModelRequest
from crab._contracts.questions import AskQuestion
from crab._contracts.tools import Tool, ToolContext, ToolResult, ToolSpec
from crab._loop import compaction
from crab._loop.compaction import Compacted, CompactionReason
from crab._loop.model_call import ModelCalls
from crab._loop.recorder import Recorder
from crab._loop.session import Session
from crab._values.budget import DEFAULT_CONTEXT_WINDOW, TokenBudget
from crab._values.compaction_text import handoff_note
from crab._values.images import ImageLimits
from crab._values.redacted import redacted_ask, redacted_question

if TYPE_CHECKING:
    from crab._contracts.config import Config
    from crab._contracts.handle import AgentHandle
    from crab._host.plugin_host import PluginHost


@dataclass(frozen=True, slots=True)
class LoopSettings:
    """The ``[crab]`` settings a turn runs with."""

    max_iterations: int = 25
    tool_timeout: float = 120.0
    max_tokens: int | None = None
    temperature: float | None = None
    images: ImageLimits = field(default_factory=ImageLimits)


class ModelContext:
    """The agent's: every loaded plugin's tools, their system prompt parts, the configured window,
    and the agent's way of asking (``ask``/``question``: None where nobody can answer) unless the
    session has its own (a chat on a remote channel)."""

    def __init__(
        self,
        host: PluginHost,
        config: Config,
        settings: LoopSettings,
        calls: ModelCalls,
        recorder: Recorder,
        handle: AgentHandle,
        *,
        redact: Callable[[str], str],
        ask: AskUser | None,
        question: AskQuestion | None,
        local: bool,
    ) -> None:
        self.host = host
        self.config = config
        self.settings = settings
        self.calls = calls
        self.recorder = recorder
        self.handle = handle
        self.redact = redact
        self.ask = ask
        self.question = question
        self.local = local
        self._parts: _CallParts | None = None

    @property
    def prompt_config(self) -> Any:
        """The config the ``crab_prompt_submit`` hooks get."""
        return self.config

    def tools(self) -> Mapping[str, Tool]:
        """The registry of every loaded plugin's tools (read per request: plugins may add tools)."""
        tools: Mapping[str, Tool] = self.host.registry("tools")
        return tools

    def emit(self, event: Event, session_id: str) -> None:
        self.calls.emit(event, session_id)

    def notice(self, text: str, level: str = "info") -> None:
        """Tell the user ``text`` (not recorded)."""
        self.calls.emit(NoticeEvent(text, "warning" if level == "warning" else "info"), "")

    async def system_prompt(self, session: Session) -> str:
        """Every plugin's ``crab_system_prompt`` parts (core's default prompt and instruction files
        first), then ``[crab] system_prompt_append``, then the handoff or compaction note, joined by
        blank lines; gathered once per live session and again when a compaction changed its note
        (the system prompt is the prefix providers cache: docs/architecture.md, "The request
        prefix never changes")."""
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

    def known_window(self, session: Session | None = None) -> int | None:
        """Tokens the model (``session``'s, else the run's) reads: ``[crab] context_window``, else
        the provider's model info, else None (a status line shows no share)."""
        configured = self.config.get("crab.context_window")
        if configured:
            return int(configured)
        info = self.calls.choose(session).info
        return info.context_window if info is not None and info.context_window else None

    def budget(self, session: Session) -> TokenBudget:
        """The session's token budget (made on first use, again after ``/model``)."""
        if session.budget is None:
            window = self.known_window(session) or DEFAULT_CONTEXT_WINDOW
            session.budget = TokenBudget(window, float(self.config.get("crab.compact_at", 0.8)))
        return session.budget

    async def request(self, session: Session, system: str, model: str) -> tuple[ModelRequest, Mapping[str, Tool]]:
        """The session's next request before the ``crab_before_model_call`` hooks (its images
        filled back), and the tools it offers. Its system prompt and tools are the session's
        prefix: the same bytes on every request until the configuration, the tool set or a
        compaction changes them (``tests/test_request_prefix.py``)."""
        await self.recorder.load_images(session)
        tools = self.tools()
        request = ModelRequest(
            model=model,
            system=system,
            messages=tuple(session.messages),
            tools=tuple(tool.spec() for tool in tools.values()),
            max_tokens=self.settings.max_tokens,
            temperature=self.settings.temperature,
        )
        return request, tools

    async def compact(self, session: Session, reason: CompactionReason, focus: str | None = None) -> Compacted | None:
        """Summarise older history into a compaction anchor on the request a turn would send next
        (``crab._loop.compaction.compact``: None when there was nothing to summarise or it failed)."""
        async with session.compacting:
            system = await self.system_prompt(session)
            base, tools = await self.request(session, system, self.calls.choose(session).model)
            budget = self.budget(session)
            return await compaction.compact(
                session, reason, focus, budget=budget, calls=self.calls, base=base, tools=tools
            )

    def _hooked(self, ask: AskUser | None, session: Session) -> AskUser | None:
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
        parts = self._asking(session)
        settings: Mapping[str, Any] = self.config.plugin_settings(tool.plugin) if tool.plugin else {}
        return ToolContext(
            session_id=parts.session_id,
            workspace=session.workspace,
            call_id=call.id,
            settings=settings,
            state=session.state,
            emit=parts.emit,
            config=self.config,
            ask=parts.ask,
            local=self.local,
            question=parts.question,
            handle=self.handle,
        )

    def _asking(self, session: Session) -> _CallParts:
        """The parts every call of ``session`` shares (its ``emit``, and its askers behind the
        masking and the permission hooks), made again only when the session or whoever answers
        for it changed: a 200-call reply builds them once, not once a call."""
        ask = session.ask if session.ask is not None else self.ask
        question = session.question if session.question is not None else self.question
        parts, session_id = self._parts, session.id
        if (
            parts is None
            or parts.session is not session
            or parts.session_id != session_id
            or parts.asker is not ask
            or parts.questioner is not question
        ):
            parts = self._parts = _CallParts(
                session,
                session_id,
                ask,
                question,
                emit=lambda event: self.emit(event, session_id),
                ask=self._hooked(redacted_ask(ask, self.redact), session),
                question=redacted_question(question, self.redact),
            )
        return parts


@dataclass(frozen=True, slots=True)
class _CallParts:
    """What ``ModelContext.tool_context`` gives every call of one session alike."""

    session: Session
    session_id: str
    asker: AskUser | None
    questioner: AskQuestion | None
    emit: Callable[[Event], None]
    ask: AskUser | None
    question: AskQuestion | None


FULL_SCHEMA = "Its full schema: {schema}"
"""Added to a failed call's error result when the request listed the tool without its full schema."""


def described(specs: tuple[ToolSpec, ...], tools: Mapping[str, Tool]) -> frozenset[str]:
    """Names of the registered tools whose schema ``specs`` (a prepared request's) carries in full
    (``Session.described``): a hook such as the progressive tool view may have listed the others
    as stubs."""
    names = []
    for spec in specs:
        tool = tools.get(spec.name)
        if tool is not None and (spec.parameters is tool.parameters or spec.parameters == tool.parameters):
            names.append(spec.name)
    return frozenset(names)


def with_full_schema(
    result: ToolResult, call: ToolCall, tools: Callable[[], Mapping[str, Tool]], full: frozenset[str]
) -> str:
    """``result``'s content, with the tool's full schema when the call failed it and the request
    carried less (not in ``full``): the schema arrives as message content, the prefix stays."""
    content = result.content
    if not result.is_error or call.name in full or not content.startswith(f"invalid arguments for {call.name}"):
        return content
    tool = tools().get(call.name)
    if tool is None:
        return content
    schema = json.dumps(tool.parameters, ensure_ascii=False, separators=(",", ":"))
    return f"{content}\n{FULL_SCHEMA.format(schema=schema)}"
