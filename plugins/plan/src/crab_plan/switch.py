"""Each session's plan-mode switch: set by ``/plan`` and by the user's answer to a plan, told to the
model as a recorded note, kept in the session's state where the permission gate reads it, and read
back from the session's stored entries when this process has not seen the session (a resume, a
subagent's child session). The store is the truth: the dict here only saves reading it again."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import crab

PLAN_KEY = "crab.permissions.plan"
"""The session-state key core's permission gate reads (docs/security.md, "Plan mode")."""
PARENT_META = "crab.parent_session"
"""Session ``meta`` key of a child session's parent (docs/storage.md)."""
TOOL = "present_plan"

NOTE_ON = "[plan mode on]"
NOTE_OFF = "[plan mode off]"
APPROVED = "[plan approved]"
LEFT = "[plan mode left]"
"""Markers of a switch (``/plan``, the user's answer to a plan): the history keeps them, so a
resumed session is in the mode it was switched to."""
RUN_ON = "[plan mode]"
RUN_OFF = "[plan mode over]"
"""Markers of what the model was told of the run's own mode (``--plan``, ``permissions = "plan"``),
which decides only where no switch was made: each run of a session says it again."""

_ABOUT = (
    "Only tools that read run (writes and commands are refused) until the user approves a plan. Explore "
    f"what you need with read tools, then call {TOOL} with your plan and its steps; do not carry it out "
    "before it is approved. (From crab, not the user's words.)"
)
ON_TEXT = f"{NOTE_ON} The user put this session in plan mode. {_ABOUT}"
RUN_ON_TEXT = f"{RUN_ON} This run is in plan mode. {_ABOUT}"
OFF_TEXT = (
    f"{NOTE_OFF} The user left plan mode: tools run with the session's usual permissions again. "
    "(From crab, not the user's words.)"
)
RUN_OFF_TEXT = (
    f"{RUN_OFF} This run is not in plan mode: tools run with the session's usual permissions. "
    "(From crab, not the user's words.)"
)


_NOTES = ((NOTE_ON, True, True), (NOTE_OFF, False, True), (RUN_ON, True, False), (RUN_OFF, False, False))


def _marker(message: crab.messages.Message) -> tuple[bool, bool] | None:
    """(plan mode on, a switch) for a message that is a marker; None for any other message."""
    if isinstance(message, crab.messages.UserMessage):
        for prefix, on, switch in _NOTES:
            if message.content.startswith(prefix + " "):
                return on, switch
    elif (
        isinstance(message, crab.messages.ToolResultMessage)
        and message.name == TOOL
        and not message.is_error
        and message.content.startswith((APPROVED, LEFT))
    ):
        return False, True
    return None


def switched(messages: Iterable[crab.messages.Message]) -> bool | None:
    """Plan mode as the last switch in ``messages`` left it; None without one."""
    state = None
    for message in messages:
        marker = _marker(message)
        if marker is not None and marker[1]:
            state = marker[0]
    return state


def told(messages: Iterable[crab.messages.Message]) -> bool | None:
    """What the model was last told of plan mode (any marker); None when never."""
    state = None
    for message in messages:
        marker = _marker(message)
        if marker is not None:
            state = marker[0]
    return state


def messages_of(entries: Sequence[crab.storage.Entry]) -> list[crab.messages.Message]:
    messages: list[crab.messages.Message] = []
    for entry in entries:
        if entry.type in ("message", "tool_result"):
            try:
                messages.append(crab.messages.message_from_dict(dict(entry.payload)))
            except (KeyError, TypeError, ValueError):
                continue  # an unreadable entry holds no marker
    return messages


class PlanSwitch:
    """Plan mode of one plugin host's sessions (see the module)."""

    def __init__(self) -> None:
        self.handle: crab.AgentHandle | None = None
        self.modes: dict[str, bool] = {}
        self.unsaid: dict[str, str] = {}
        """Per session: the note the next prompt records (a switch made by ``/plan``)."""
        self.pending: dict[str, bool] = {}
        """Per session: the plan mode to put in its state at its next tool call. Written only when
        it changes here, so another writer (crab-acp's editor mode) is not undone at every call."""
        self.told: dict[str, bool | None] = {}
        """Per session: what its stored history last told the model (read once, with the switch)."""
        self.noted: set[str] = set()
        """Sessions whose model was told of this run's mode (or of a switch) in this process."""

    @property
    def configured(self) -> bool:
        """Whether sessions start in plan mode (``[crab] permissions = "plan"``, ``--plan``)."""
        return self.handle is not None and self.handle.config.get("crab.permissions") == "plan"

    async def is_on(self, session_id: str) -> bool:
        """The session's plan mode: from this process, else from its stored entries (a child
        session without markers of its own follows its parent's)."""
        if session_id not in self.modes:
            self.modes[session_id] = self.pending[session_id] = await self._stored(session_id)
        return self.modes[session_id]

    async def _stored(self, session_id: str) -> bool:
        if self.handle is None or not session_id:
            return self.configured
        try:
            entries = await self.handle.entries(session_id)
            meta: Mapping[str, object] = (await self.handle.session_info(session_id)).meta
        except crab.CrabError:
            return self.configured
        messages = messages_of(entries)
        self.told[session_id] = told(messages)
        found = switched(messages)
        if found is not None:
            return found
        parent = meta.get(PARENT_META)
        return await self.is_on(parent) if isinstance(parent, str) and parent != session_id else self.configured

    def set(self, session_id: str, on: bool, *, note: bool) -> None:
        """Switch the session; ``note``: the model is told at the next prompt (``/plan``)."""
        self.modes[session_id] = self.pending[session_id] = on
        if note:
            self.unsaid[session_id] = ON_TEXT if on else OFF_TEXT
        else:
            self.unsaid.pop(session_id, None)

    async def note_for(self, session_id: str) -> str | None:
        """The note recorded after this prompt: a switch not told yet, or, at a session's first
        prompt in this process, the run's mode where the model was last told otherwise."""
        said = self.unsaid.pop(session_id, None)
        if said is not None:
            self.noted.add(session_id)
            return said
        if session_id in self.noted or self.handle is None:
            return None
        self.noted.add(session_id)
        on = await self.is_on(session_id)
        last = self.told.get(session_id)
        if on and last is not True:
            return RUN_ON_TEXT
        if not on and last is True:
            return RUN_OFF_TEXT
        return None

    async def sync(self, ctx: crab.ToolContext) -> None:
        """Put the session's plan mode where the permission gate reads it (it runs after us), when
        it is new here: first seen in this process, or switched."""
        await self.is_on(ctx.session_id)
        if ctx.session_id in self.pending:
            ctx.state[PLAN_KEY] = self.pending.pop(ctx.session_id)

    async def in_state(self, ctx: crab.ToolContext) -> bool:
        """The plan mode the gate sees for this call's session (another plugin may have set it)."""
        switched = ctx.state.get(PLAN_KEY)
        return switched if isinstance(switched, bool) else await self.is_on(ctx.session_id)
