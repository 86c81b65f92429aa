"""Events: the stream events providers yield (text, thinking, tool call, usage, retry, error, message
end) and those the loop adds, whose versioned JSON-lines form is ``crab/_values/event_json.py`` (docs/format.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from crab._contracts.messages import AssistantMessage, ToolCall, Usage

ErrorKind = Literal[
    "auth",
    "rate_limit",
    "overloaded",
    "server",
    "network",
    "context_overflow",
    "model_not_found",
    "invalid_request",
    "stream",
    "tool",
    "plugin",
    "config",
    "unknown",
]

TurnStop = Literal["end", "aborted", "error", "guard", "max_iterations", "command"]
"""How a turn ended: a final answer, an abort, a failure, a loop-guard stop, the iteration cap
(after one last tool-less answer), or a router command that never reached the model."""


@dataclass(frozen=True)
class Event:
    """Base of every event; ``type`` is the name used in JSON."""

    type: ClassVar[str] = "event"


@dataclass(frozen=True)
class TextDelta(Event):
    type: ClassVar[str] = "text_delta"
    text: str


@dataclass(frozen=True)
class ThinkingDelta(Event):
    type: ClassVar[str] = "thinking_delta"
    text: str


@dataclass(frozen=True)
class ToolCallEvent(Event):
    """The model asked for a complete tool call (arguments fully received)."""

    type: ClassVar[str] = "tool_call"
    call: ToolCall


@dataclass(frozen=True, slots=True)
class FileDiff:
    """What a tool changed in one file, for renderers, permission questions and editors.

    ``unified`` is the unified diff (``---``/``+++`` headers, a few context lines); ``before`` and
    ``after`` are the whole texts when they are small enough to show side by side (None when the
    file did not exist before, was deleted, or is too large: then only ``unified`` is kept).
    """

    path: str
    unified: str
    before: str | None = None
    after: str | None = None
    added: int = 0
    removed: int = 0


@dataclass(frozen=True)
class ToolResultEvent(Event):
    """A tool call finished (or was refused, skipped or interrupted).

    ``duration_ms`` is the tool's own run time with the after hooks, never the time a before
    hook (the permission question) waited; 0 when the tool did not run.
    """

    type: ClassVar[str] = "tool_result"
    call_id: str
    name: str
    content: str
    is_error: bool = False
    duration_ms: float = 0.0
    diffs: tuple[FileDiff, ...] = ()


@dataclass(frozen=True)
class UsageEvent(Event):
    type: ClassVar[str] = "usage"
    usage: Usage


@dataclass(frozen=True)
class RetryEvent(Event):
    """A provider is retrying a failed request after ``delay`` seconds."""

    type: ClassVar[str] = "retry"
    attempt: int
    max_attempts: int
    delay: float
    reason: str


@dataclass(frozen=True)
class ErrorEvent(Event):
    """Something failed. From a provider stream it ends the model call as an error."""

    type: ClassVar[str] = "error"
    message: str
    kind: ErrorKind = "unknown"


@dataclass(frozen=True)
class MessageEnd(Event):
    """The last event of a successful provider stream: the complete assistant message."""

    type: ClassVar[str] = "message_end"
    message: AssistantMessage


@dataclass(frozen=True)
class NoticeEvent(Event):
    """Information for the user that is not model output (guard warnings, plugin problems)."""

    type: ClassVar[str] = "notice"
    message: str
    level: Literal["info", "warning"] = "info"


@dataclass(frozen=True)
class CompactionEvent(Event):
    """Older history is being (``start``) or was (``done``) summarised into a compaction anchor,
    or the attempt failed (``failed``, with ``error``). ``reason`` is ``threshold`` (the request
    would pass ``[crab] compact_at`` of the window), ``overflow`` (the provider said the request
    did not fit; the call is retried once) or ``manual`` (``/compact``)."""

    type: ClassVar[str] = "compaction"
    session_id: str
    phase: Literal["start", "done", "failed"]
    reason: Literal["threshold", "overflow", "manual"]
    summarised: int = 0
    kept: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    summary: str | None = None
    error: str | None = None

    def line(self) -> str:
        """The one line every renderer shows for this event (plain, rich, a chat channel)."""
        why = {"threshold": "the context is filling up", "overflow": "the window was exceeded", "manual": "/compact"}
        if self.phase == "start":
            return f"compacting {self.summarised} older messages ({why[self.reason]})…"
        if self.phase == "failed":
            return f"compaction failed: {self.error}"
        return (
            f"compacted {self.summarised} messages into a summary, {self.kept} kept verbatim "
            f"(~{self.tokens_before:,} → ~{self.tokens_after:,} tokens)"
        )


@dataclass(frozen=True)
class ModelCallEvent(Event):
    """A model call began (``start``) or ended (``end``): every call the loop makes, a turn's,
    a compaction's summary (``purpose="compaction"``) or a plugin's ``AgentHandle.complete``
    (``plugin``), for tracing and meters. ``provider`` and ``model`` are what the request went
    to; at ``end``, ``response_model`` is the model the provider said answered, ``stop_reason``
    the reply's (``error`` with ``error_kind`` when it failed) and ``usage`` its priced usage."""

    type: ClassVar[str] = "model_call"
    session_id: str
    phase: Literal["start", "end"]
    provider: str
    model: str
    purpose: Literal["turn", "compaction", "plugin"] = "turn"
    response_model: str | None = None
    stop_reason: str | None = None
    error_kind: ErrorKind | None = None
    usage: Usage | None = None


PlanStatus = Literal["pending", "in_progress", "done"]
"""Where one step of a plan stands."""


@dataclass(frozen=True, slots=True)
class PlanItem:
    """One step of the checklist the model keeps for a session (the todo tool's)."""

    text: str
    status: PlanStatus = "pending"


@dataclass(frozen=True)
class PlanEvent(Event):
    """The session's plan changed: ``items`` is the whole checklist now (empty: it was cleared).

    A plugin offering a plan tool emits it; renderers show the list (rich: in place), editors
    over ACP get a plan update.
    """

    type: ClassVar[str] = "plan"
    session_id: str
    items: tuple[PlanItem, ...] = ()


@dataclass(frozen=True)
class CommandOutput(Event):
    """What a router command answered."""

    type: ClassVar[str] = "command_output"
    command: str
    text: str
    is_error: bool = False


@dataclass(frozen=True)
class TurnStarted(Event):
    type: ClassVar[str] = "turn_start"
    session_id: str
    turn_id: str
    input: str


@dataclass(frozen=True)
class TurnEnded(Event):
    """A turn ended; ``model`` (the model id, as in ``RenderTarget.model``) and ``context_window``
    (None when unknown) are what its last request went to, for a status line (``/model`` may have
    switched them since the run started)."""

    type: ClassVar[str] = "turn_end"
    session_id: str
    turn_id: str
    stop: TurnStop
    text: str = ""
    usage: Usage | None = None
    error: str | None = None
    model: str | None = None
    context_window: int | None = None


@dataclass(frozen=True)
class ChildEvent(Event):
    """An event of a child session, delivered in its parent's stream.

    A tool that runs a child agent (``AgentHandle.run_child``) gets its own session in the
    store; what that session's turn emits reaches the parent's renderers and observers wrapped
    in one of these, so a renderer that knows nothing of children shows nothing of them (and
    never mistakes a child's text for the parent's answer). ``session_id`` is the child's,
    ``label`` names what runs there (an agent's name), ``call_id`` is the parent's tool call
    that started it; ``event`` is the child's event (a ``ChildEvent`` again for a grandchild).
    Redacted like every event: it passes ``Agent.emit``.
    """

    type: ClassVar[str] = "child"
    session_id: str
    label: str
    call_id: str
    event: Event


StreamEvent = TextDelta | ThinkingDelta | ToolCallEvent | UsageEvent | RetryEvent | ErrorEvent | MessageEnd
"""What ``Provider.stream`` may yield."""
