"""``TurnSteps``: one step of a session's turn carried out with an agent's own machinery (hooks, model
calls, the tool runner, the recorder, emit) on the session as the store holds it, for a driver that
runs the ``TurnMachine`` elsewhere (a durable workflow engine: each step may run in another process).
Each step is carried out by ``Turn.carry_out``, the in-process driver's own: one implementation; a question
a call asked in another process is asked through the session's own question path (``ask_user``).
Public as ``crab.steps.TurnSteps`` (docs/architecture.md#a-turn-made-of-steps, docs/library.md)."""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crab._contracts.errors import StoreError, UsageError
from crab._contracts.events import Event
from crab._contracts.interception import AskUser, PermissionRequest
from crab._contracts.messages import Message, ToolCall, ToolResultMessage
from crab._contracts.questions import AskQuestion, Question
from crab._contracts.storage import Entry
from crab._contracts.tools import Tool, ToolResult
from crab._loop.session import QueuedInput, Session
from crab._loop.steps import Input, Prompt, RunTools, Step
from crab._loop.turn import Turn
from crab._values.compaction_text import handoff_note
from crab._values.history import load_history
from crab._values.model_choice import stored_choice
from crab._values.redacted import redacted_ask, redacted_question

if TYPE_CHECKING:
    from crab._loop.agent import Agent

__all__ = ["SessionGone", "TurnSteps", "turn_steps"]


class SessionGone(UsageError):
    """The session named cannot be run by this agent: not in its store, or of another workspace."""


class TurnSteps:
    """One session of ``agent``'s store as a turn's start sees it (read once, no lock: the driver
    runs one turn of a session at a time), to carry out steps of its turn.

    ``entries`` are the stored entries since the last handoff as read; ``messages`` the context a
    resume repairs them to; ``missing`` the calls an earlier turn left without a result (``begin``
    pairs them). Use one object per step: read it again for the next (``crab.Agent.turn_steps``).
    """

    def __init__(self, agent: Agent, session: Session, entries: list[Entry], missing: Sequence[ToolResultMessage]):
        self._agent = agent
        self._session = session
        self.entries = entries
        self.missing = missing
        self.steered: list[QueuedInput] = []
        """The steering inputs the engine's turn took (``took_steering``), answered with its outcome."""

    @property
    def session_id(self) -> str:
        return self._session.id

    @property
    def workspace(self) -> Path:
        return self._session.workspace

    @property
    def store_name(self) -> str:
        """The name of the store the session lives in (``"memory"``: in this process only)."""
        return self._agent.store.name

    @property
    def messages(self) -> Sequence[Message]:
        return self._session.messages

    async def again(self) -> TurnSteps:
        """The session read from the store once more: the next step's view, as another process
        reads it (what earlier steps recorded included)."""
        return await turn_steps(self._agent, self.session_id, ask=self._session.ask, question=self._session.question)

    async def begin(self) -> None:
        """At a turn's start: a stand-in result for each call an earlier turn left without one."""
        await self._agent.recorder.pair_after_crash(self.session_id, str(self.workspace), self.missing)

    def _turn(self, prompt: Prompt | None) -> Turn:
        item = QueuedInput(prompt.text if prompt else "", prompt.images if prompt else ())
        turn = Turn(self._agent.context, self._session, item, deque())
        turn.alone = True  # this process carries out single steps: the machine is the driver's
        if prompt is not None:  # a Submit or an Accept names its prompt by the driver's id
            turn._inputs[prompt.id] = (item, deque())
        return turn

    async def carry_out(self, step: Step, prompt: Prompt | None = None) -> Input:
        """``step``, as ``crab run`` carries it out (``prompt``: the one a ``Submit`` offers)."""
        turn = self._turn(prompt)
        try:
            return await turn.carry_out(step)
        finally:
            self._agent.recorder.forget(self._session)

    async def record_error(self, step: RunTools, call: ToolCall, text: str) -> None:
        """Record ``text`` as the error result of ``call`` of ``step`` (once: a result it has stays)."""
        turn = self._turn(None)
        try:
            await turn.record_result(step, call, ToolResult(text, is_error=True), 0.0)
        finally:
            self._agent.recorder.forget(self._session)

    async def mark(self, payload: Mapping[str, Any]) -> None:
        """Store an event entry (redacted) of the driver's own: ids and kinds, never output."""
        await self._agent.recorder.append(self._session, "event", dict(payload))

    async def stored(self) -> list[Entry]:
        """Every entry the store holds for the session now, from its first."""
        return await self._agent.store.entries(self.session_id)

    def steering(self) -> list[str]:
        """What a person sent to steer this turn while it runs (under ``crab serve``, a channel's
        ``handle_input(..., steer=True)``), oldest first, as crab stores it (secrets masked): an
        engine hands each to its turn once, and at the end says how many it took (``took_steering``)."""
        return [self.redact(item.text) for item in self._session.steering]

    def took_steering(self, count: int) -> None:
        """The turn took the first ``count`` inputs ``steering()`` gave: they are answered with its
        outcome; any it did not take run as the session's next turn (as after an in-process turn)."""
        for _ in range(min(count, len(self._session.steering))):
            self.steered.append(self._session.steering.popleft())

    def tool(self, name: str) -> Tool | None:
        return self._agent.tools.get(name)

    def redact(self, text: str) -> str:
        """``text`` as crab stores and shows it (known secrets masked)."""
        return self._agent.redactor.text(text)

    def redact_payload(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        return dict(self._agent.redactor.payload(dict(payload)))

    def emit(self, event: Event) -> None:
        """Show ``event`` through the agent (redacted, to its renderer and listeners)."""
        self._agent.emit(event, self.session_id)

    def can_ask(self, question: PermissionRequest | Question) -> bool:
        """Whether someone can answer ``question`` here: this session's or the agent's asker of its
        kind exists (where none does, say so at once, as a tool's ``ctx.ask`` being None does)."""
        return self._asker(question) is not None

    async def ask_user(self, question: PermissionRequest | Question) -> str | None:
        """Ask the user ``question`` (a call's permission, a tool's ``crab.Question``) through this
        session's own question path, as an ``Ask`` step of an in-process turn asks it: once whoever
        takes the session's events has taken those before it, with secrets masked, a question's
        answer held to ``Question.answer_for``. A permission's ``"once"``, ``"always"`` or
        ``"deny"``, a question's answer; None when nobody answered or nobody can (``can_ask``).
        For a driver whose tools run elsewhere and ask through it (a durable engine's client);
        the ``crab_permission_request`` hooks ran where the call is."""
        asker = self._asker(question)
        if asker is None:
            return None
        if self._session.caught_up is not None:
            await self._session.caught_up()
        answer = await asker(question)
        return answer if isinstance(answer, str) else None

    def _asker(self, question: PermissionRequest | Question) -> Callable[[Any], Awaitable[object]] | None:
        session, context = self._session, self._agent.context
        if isinstance(question, PermissionRequest):
            return redacted_ask(session.ask if session.ask is not None else context.ask, context.redact)
        return redacted_question(session.question if session.question is not None else context.question, context.redact)


async def turn_steps(
    agent: Agent,
    session_id: str | None,
    title: str | None = None,
    *,
    ask: AskUser | None = None,
    question: AskQuestion | None = None,
) -> TurnSteps:
    """``session_id`` (None: a new session titled ``title``) read from ``agent``'s store as a resume
    reads it; ``SessionGone`` when this agent cannot run it. ``ask``/``question``: how its
    permission questions and tools' questions reach the user when that is not the agent's own way
    (a library agent's ``ask=``, a channel's person)."""
    store, here = agent.store, agent.workspace
    if session_id is None:
        session_id = (await store.create_session(str(here), title=title)).id
    try:
        info = await store.get_session(session_id)
    except StoreError as exc:
        raise SessionGone(f"no session {session_id} in this store ({exc}): `crab sessions list` shows them") from None
    workspace = Path(info.workspace) if info.workspace else here
    if workspace.resolve() != here.resolve():
        raise SessionGone(
            f"session {session_id} belongs to {workspace}, and this agent works in {here}: run it in that folder"
        )
    entries = await store.entries(session_id, since_handoff=True)
    history = load_history(entries)
    session = Session(
        info=info,
        workspace=workspace,
        messages=history.messages,
        handoff=dict(history.handoff) if history.handoff else None,
        ask=ask,
        question=question,
    )
    agent.models.restore(session, stored_choice(entries))
    # The system prompt the session's requests carried (a live session gathers it once): the same
    # bytes in every process keep the prefix providers cache, and it is not stored again.
    for entry in entries:
        if entry.type == "event" and entry.payload.get("kind") == "system_prompt":
            session.system_hashes.add(str(entry.payload.get("sha256")))
            session.system = (handoff_note(session.handoff), str(entry.payload.get("text", "")))
    return TurnSteps(agent, session, entries, history.missing)
