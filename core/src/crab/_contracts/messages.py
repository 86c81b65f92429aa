"""The conversation model: messages, tool calls, thinking blocks and usage (frozen dataclasses), whose
versioned JSON form is ``crab/_values/message_json.py`` (docs/format.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from crab._contracts.images import ImagePart

FORMAT_VERSION = 1
"""Version of the JSON shape of messages and events; bumped on incompatible changes."""


StopReason = Literal["end", "tool_use", "max_tokens", "aborted", "error"]
"""Why an assistant message ended. ``aborted`` and ``error`` messages are never replayed."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model asked for.

    ``arguments`` holds the parsed JSON object. When the model sent arguments that are not a JSON
    object, ``arguments`` is empty, ``raw_arguments`` keeps what was sent and ``parse_error`` says
    what is wrong; the loop answers such a call with an error result and never runs the tool.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None
    parse_error: str | None = None


@dataclass(frozen=True, slots=True)
class Thinking:
    """A block of model reasoning; ``signature`` is kept so providers that sign it can replay it."""

    text: str
    signature: str | None = None
    redacted: bool = False


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts for one model call (or a sum of them); ``cost`` is in US dollars when known."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cost: float | None = None

    def __add__(self, other: Usage) -> Usage:
        cost: float | None
        cost = None if self.cost is None and other.cost is None else (self.cost or 0.0) + (other.cost or 0.0)
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cost=cost,
        )


@dataclass(frozen=True, slots=True)
class UserMessage:
    """Text the user (or a channel acting for them) sent, and the images they attached."""

    content: str
    role: Literal["user"] = "user"
    images: tuple[ImagePart, ...] = ()


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """One model reply: text, reasoning, the tool calls it asked for and why it stopped."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    thinking: tuple[Thinking, ...] = ()
    stop_reason: StopReason = "end"
    usage: Usage | None = None
    model: str | None = None
    provider: str | None = None
    error: str | None = None
    role: Literal["assistant"] = "assistant"

    @property
    def replayable(self) -> bool:
        """False for aborted or failed replies, which must never be sent to a provider again."""
        return self.stop_reason not in ("aborted", "error")


@dataclass(frozen=True, slots=True)
class ToolResultMessage:
    """The answer to one tool call, paired with it by ``call_id``; ``images`` a tool gave back."""

    call_id: str
    name: str
    content: str
    is_error: bool = False
    role: Literal["tool"] = "tool"
    images: tuple[ImagePart, ...] = ()


Message = UserMessage | AssistantMessage | ToolResultMessage
