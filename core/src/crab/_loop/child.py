"""Child sessions: a tool call that runs one turn of a new session inside the same agent
(``AgentHandle.run_child``); a killed tree is made whole on resume by ``Recorder.pair_after_crash``."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crab._config.paths import live_home
from crab._contracts.errors import ConfigError
from crab._contracts.events import ChildEvent, Event, ToolCallEvent
from crab._contracts.handle import ChildOutcome
from crab._contracts.interception import AskUser
from crab._contracts.messages import AssistantMessage, Message, ToolCall
from crab._contracts.questions import AskQuestion
from crab._contracts.tools import Tool, ToolContext
from crab._loop.model_call import ModelCalls
from crab._loop.model_context import LoopSettings, ModelContext
from crab._loop.recorder import PARENT_CALL_META, PARENT_SESSION_META, Recorder
from crab._loop.session import QueuedInput, Session
from crab._loop.turn import Turn
from crab._system.live_sessions import turn_running
from crab._values.child import child_choice, child_title, child_tools, labelled

if TYPE_CHECKING:
    from crab._loop.agent import Agent

__all__ = ["CHILD_LABEL_META", "PARENT_CALL_META", "PARENT_SESSION_META", "run_child"]

CHILD_LABEL_META = "crab.child_label"
"""Session ``meta`` key: what runs in the child (an agent's name), as its events are labelled."""
QUESTION_LOCK_KEY = "crab.child_questions"
"""Parent session state: the lock that puts its children's permission questions one at a time."""


class ChildContext(ModelContext):
    """A child session's: ``tools`` (a subset of the registry), the agent's system prompt and the
    child's ``instructions``, the parent call's way of asking (labelled), its own model calls
    (whose events reach the parent's stream wrapped), and no config for ``crab_prompt_submit``
    (the prompt is the model's, not the user's)."""

    def __init__(
        self,
        parent: ModelContext,
        calls: ModelCalls,
        recorder: Recorder,
        settings: LoopSettings,
        *,
        tools: Callable[[], Mapping[str, Tool]],
        instructions: str,
        ask: AskUser | None,
        question: AskQuestion | None,
    ) -> None:
        super().__init__(
            parent.host,
            parent.config,
            settings,
            calls,
            recorder,
            parent.handle,
            redact=parent.redact,
            ask=ask,
            question=question,
            local=parent.local,
        )
        self.chosen = tools
        self.instructions = instructions.strip()

    @property
    def prompt_config(self) -> Any:
        return None

    def tools(self) -> Mapping[str, Tool]:
        return self.chosen()

    async def system_prompt(self, session: Session) -> str:
        base = await super().system_prompt(session)
        return f"{base}\n\n{self.instructions}" if base and self.instructions else base or self.instructions

    def tool_context(self, session: Session, call: ToolCall, tool: Tool) -> ToolContext:
        made = super().tool_context(session, call, tool)
        made.ask, made.question = self.ask, self.question  # the parent call's, as it asks them
        return made


async def run_child(
    agent: Agent,
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
    """``AgentHandle.run_child`` (what it promises is documented on the Protocol): the child is
    linked to its parent by the session ``meta`` (``PARENT_SESSION_META``, ``PARENT_CALL_META``,
    which every store keeps and lists), so the one recorder pairs a killed tree on resume."""
    if not ctx.call_id:
        raise ConfigError("run_child needs the context of a tool call (one with a call id)")
    home = Path(ctx.workspace)
    folder = home if workspace is None else Path(workspace).resolve()
    if not folder.is_dir():
        raise ConfigError(f"run_child: the child's workspace {folder} is not a folder (make it first)")
    # the calling session's model (``/model`` may have switched it), else the run's
    parent_session = next((session for session in agent.busy if session.id == ctx.session_id), None)
    choice = child_choice(model, agent.host.registry("providers"), agent.model_for(parent_session))
    meta = {PARENT_SESSION_META: ctx.session_id, PARENT_CALL_META: ctx.call_id, CHILD_LABEL_META: label}
    created = await agent.store.create_session(str(home), title=child_title(label, prompt, title), meta=meta)
    child = Session(info=created, workspace=folder, state=dict(state or {}))
    called: list[str] = []
    replies = 0

    def emit(event: Event, _session_id: str = "") -> None:
        if isinstance(event, ToolCallEvent):
            called.append(event.call.name)
        ctx.emit(ChildEvent(child.id, label, ctx.call_id, event))

    class Counting(Recorder):
        """The agent's recorder, counting the child's model replies."""

        async def message(self, session: Session, message: Message, step_id: str | None = None) -> bool:
            nonlocal replies
            if isinstance(message, AssistantMessage):
                replies += 1
            return await super().message(session, message, step_id)

    lock = ctx.state.setdefault(QUESTION_LOCK_KEY, asyncio.Lock())
    parent = agent.context
    settings = parent.settings
    if max_iterations is not None:
        settings = replace(settings, max_iterations=max(1, int(max_iterations)))
    calls = ModelCalls(
        agent.host.dispatch,
        lambda _session: choice,
        emit=emit,
        append_entry=agent.recorder.append,
        redact=parent.redact,
    )
    context = ChildContext(
        parent,
        calls,
        Counting(agent.store, agent.redactor),
        settings,
        tools=lambda: child_tools(parent.tools(), tools, read_only),
        instructions=instructions or "",
        # never the agent's own: where the parent call cannot ask, neither can its child
        ask=labelled(ctx.ask, label, lock),
        question=labelled(ctx.question, label, lock),
    )
    item = QueuedInput(prompt)
    agent.opened(child)
    try:
        async with turn_running(live_home(), child.id):
            outcome = await Turn(context, child, item, deque([item])).run()
    finally:
        # A child session has its one turn: what it left running (a background job, which no
        # other session can read or end) ends with it.
        await agent.leave(child, "child")
    ctx.add_usage(outcome.usage)
    return ChildOutcome(
        session_id=child.id,
        label=label,
        text=outcome.text,
        stop=outcome.stop,
        error=outcome.error,
        usage=outcome.usage,
        tools_called=tuple(called),
        model_calls=replies,
    )
