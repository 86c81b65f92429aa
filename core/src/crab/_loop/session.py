"""A live session: its stored header, the repaired context cache, queues and per-session state."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crab._contracts.handle import TurnOutcome as TurnOutcome  # the loop's modules import it from here
from crab._contracts.images import ImagePart
from crab._contracts.interception import AskUser
from crab._contracts.messages import Message, Usage
from crab._contracts.questions import AskQuestion
from crab._contracts.storage import SessionInfo
from crab._values.budget import TokenBudget
from crab._values.model_choice import ModelChoice


@dataclass(eq=False)
class QueuedInput:
    """User input waiting for (or taking part in) a turn; resolved with that turn's outcome.

    It stays in its queue until it has been written to the store (in flight), so an abort never
    loses it.
    """

    text: str
    images: tuple[ImagePart, ...] = ()
    outcome: asyncio.Future[TurnOutcome] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


@dataclass(eq=False)
class Session:
    """What the loop keeps in memory for a session.

    ``messages`` is the repaired context since the last handoff (the store is the truth; this
    is a cache kept in step as entries are appended). ``state`` is the tools' session scratch.
    ``budget`` is the token budget, made on first use (``ModelContext.budget``).
    ``ask`` is how the permission gate asks the person behind this session when that is not the
    agent's own ``ask`` (a chat on a remote channel: ``crab._assembly.channel_host``); ``question``
    likewise asks that person a tool's ``crab.Question``.
    ``compacting`` is held while a compaction rewrites the context; a turn does not start then.
    ``side_usage`` is what ``AgentHandle.complete`` spent for the session, until its turn takes it.
    ``described`` names the tools the last request described fully (not as a stub of the
    progressive view): a call to any other that fails its schema gets the schema in its result.
    ``model`` is the provider and model ``/model`` chose for this session (None: the agent's); a
    resume restores it from the entry that recorded the switch.
    ``blobs`` caches the image bytes read back from the store (``crab._values.images``).
    """

    info: SessionInfo
    workspace: Path
    messages: list[Message] = field(default_factory=list)
    handoff: dict[str, Any] | None = None
    state: dict[str, Any] = field(default_factory=dict)
    system_hashes: set[str] = field(default_factory=set)
    system: tuple[str | None, str] | None = None
    """The system prompt this session's requests carry, with the handoff note it was gathered for
    (``ModelContext.system_prompt``: once per live session, again after a compaction)."""
    shared: bool = False
    """The resume found a turn of this session running in another process: the prompt it ended on
    may still be answered there, so the next turn records no stand-in reply for it."""
    steering: deque[QueuedInput] = field(default_factory=deque)
    follow_ups: deque[QueuedInput] = field(default_factory=deque)
    task: asyncio.Task[TurnOutcome] | None = None
    busy: bool = False
    abort_requested: bool = False
    budget: TokenBudget | None = None
    ask: AskUser | None = None
    question: AskQuestion | None = None
    caught_up: Callable[[], Awaitable[None]] | None = None
    """What a question (an ``Ask`` step) waits for first, when whoever takes this session's events
    takes them later than they are emitted (a program iterating a ``crab.Run``): that every event
    before the question was taken, the call it is about among them."""
    compacting: asyncio.Lock = field(default_factory=asyncio.Lock)
    described: frozenset[str] = frozenset()
    model: ModelChoice | None = None
    side_usage: Usage = field(default_factory=Usage)
    """Usage of model calls a plugin made for this session while its turn ran
    (``AgentHandle.complete``: an MCP server's sampling request); the turn adds it to its own."""
    blobs: dict[str, bytes] = field(default_factory=dict)
    images_scanned: tuple[list[Message] | None, int] = (None, 0)
    """The message list last checked for images named only by hash, and how many of its messages
    were (messages are only appended to a list; a new list is checked from its start), so a
    request checks only the messages added since: the loop's cost does not grow with the turn."""

    @property
    def id(self) -> str:
        return self.info.id
