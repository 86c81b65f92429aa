"""A worker carrying out one step of a turn with a crab agent's own machinery (the in-process
driver's: hooks, model calls, the tool runner, the recorder) on a session loaded from the store.

The one module of this plugin that reaches below crab's public API (``crab._loop``): crab has no
public "carry out this step" yet, and the steps' shape becomes public with this second driver
(docs/library.md#steps). Everything here is what ``crab._loop.turn.Turn`` does for one step, and
what ``Agent.resume`` does at a turn's start, minus the parts that hold only within one process.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import crab
from crab._loop.agent import Agent as LoopAgent
from crab._loop.compaction import handoff_note
from crab._loop.history import INTERRUPTED, NO_REPLY, STOPPED, load_history
from crab._loop.model_choice import stored_choice
from crab._loop.session import QueuedInput, Session
from crab._loop.turn import Turn

from crab_temporal import _steps as steps

STARTED = "crab-temporal.tool-started"
"""The ``kind`` of the event entry a worker stores before it runs a call of a tool that changes
things: a retry that finds it with no result knows the call may have had its effect."""
STOPPED_STAND_IN = STOPPED
"""The stand-in result crab records for a call a killed process left without one."""
INTERRUPTED_STAND_IN = INTERRUPTED
NO_REPLY_STAND_IN = NO_REPLY
"""The reply a turn records for the prompt of a turn that got none (not the model's: never shown)."""


class SessionGone(crab.CrabError):
    """The session a workflow names cannot be run here (unknown, or of another workspace)."""


@dataclass
class Loaded:
    """A session as a step sees it: the repaired context, and the raw entries since its handoff."""

    session: Session
    entries: list[crab.storage.Entry]
    missing: Sequence[crab.messages.ToolResultMessage]


def loop_agent(agent: crab.Agent) -> LoopAgent:
    return agent._agent


async def create_session(agent: crab.Agent, title: str | None = None) -> str:
    """A new session of ``agent``'s workspace in its store; its id."""
    loop = loop_agent(agent)
    info = await loop.store.create_session(str(loop.workspace), title=title)
    return info.id


async def session_exists(agent: crab.Agent, session_id: str) -> bool:
    try:
        await loop_agent(agent).store.get_session(session_id)
    except crab.StoreError:
        return False
    return True


async def load(agent: crab.Agent, session_id: str) -> Loaded:
    """Read ``session_id`` from the store as a resume does (no lock: Temporal runs one turn of a
    session at a time, by its workflow id); ``SessionGone`` when this worker cannot run it."""
    loop = loop_agent(agent)
    try:
        info = await loop.store.get_session(session_id)
    except crab.StoreError as exc:
        raise SessionGone(f"session {session_id} is not in this worker's store ({exc})") from None
    workspace = Path(info.workspace) if info.workspace else loop.workspace
    if workspace.resolve() != loop.workspace.resolve():
        raise SessionGone(
            f"session {session_id} belongs to {workspace}, and this worker runs in {loop.workspace}:"
            " start a worker in that folder"
        )
    entries = await loop.store.entries(session_id, since_handoff=True)
    history = load_history(entries)
    session = Session(
        info=info,
        workspace=workspace,
        messages=history.messages,
        handoff=dict(history.handoff) if history.handoff else None,
    )
    loop._restore_model(session, stored_choice(entries))
    # The system prompt the session's requests carried (a live session gathers it once): the same
    # bytes on every worker keep the prefix providers cache, and it is not stored again.
    for entry in entries:
        if entry.type == "event" and entry.payload.get("kind") == "system_prompt":
            session.system_hashes.add(str(entry.payload.get("sha256")))
            session.system = (handoff_note(session.handoff), str(entry.payload.get("text", "")))
    return Loaded(session, entries, history.missing)


async def pair_after_crash(agent: crab.Agent, loaded: Loaded) -> None:
    """At a turn's start: a stand-in result for each call an earlier turn left without one."""
    session = loaded.session
    await loop_agent(agent).recorder.pair_after_crash(session.id, str(session.workspace), loaded.missing)


def turn(agent: crab.Agent, loaded: Loaded, prompt: steps.Prompt | None = None) -> Turn:
    """The in-process driver over ``loaded``, to carry out one step (its own machine is unused)."""
    item = QueuedInput(prompt.text if prompt else "", prompt.images if prompt else ())
    driver = Turn(loop_agent(agent).turn_parts(), loaded.session, item, deque())
    if prompt is not None:
        driver._inputs[prompt.id] = (item, deque())
    return driver


async def carry_out(driver: Turn, step: steps.Step) -> steps.Input:
    """``step``, as the in-process driver carries it out."""
    try:
        return await driver._carry_out(step)
    finally:
        driver.parts.recorder.forget(driver.session)


async def record_result(driver: Turn, step: steps.RunTools, call: crab.messages.ToolCall, text: str) -> None:
    """Record ``text`` as the (error) result of ``call``."""
    try:
        await driver._record_result(step, call, crab.ToolResult(text, is_error=True), 0.0)
    finally:
        driver.parts.recorder.forget(driver.session)


def tool_of(agent: crab.Agent, name: str) -> crab.Tool | None:
    return loop_agent(agent).tools.get(name)


def exclusive_tools(agent: crab.Agent) -> frozenset[str]:
    """The names of the tools that run alone, never beside another call."""
    return frozenset(name for name, tool in loop_agent(agent).tools.items() if tool.exclusive)


def redact(agent: crab.Agent, text: str) -> str:
    return loop_agent(agent).redactor.text(text)


def redacted_payload(agent: crab.Agent, payload: dict[str, Any]) -> dict[str, Any]:
    return dict(loop_agent(agent).redactor.payload(payload))


async def mark(agent: crab.Agent, session_id: str, payload: dict[str, Any]) -> None:
    """Store an event entry of ids only (never a secret, never output)."""
    await loop_agent(agent).store.append(session_id, "event", payload)


def emit(agent: crab.Agent, event: crab.events.Event, session_id: str) -> None:
    """Show ``event`` through the agent (redacted, to its renderer and listeners)."""
    loop_agent(agent).emit(event, session_id)
