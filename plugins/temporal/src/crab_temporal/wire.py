"""What travels between a turn's workflow and its activities, and so into Temporal's history: ids
and small values only. A reply comes back as stored (secrets masked), its text capped and its tool
calls as ids and names (a worker reads the arguments from the store); tool output never travels."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import crab

REPLY_TEXT_CAP = 4_000
"""Characters of a reply's text the workflow keeps (the answer a client shows is read from the store)."""


def reply_to_wire(
    message: crab.messages.AssistantMessage,
    exclusive: frozenset[str] = frozenset(),
    *,
    redact: Callable[[str], str],
) -> dict[str, Any]:
    """``exclusive``: the names of the tools that run alone (the workflow batches calls by it).
    The text is masked by ``redact`` before it is cut: a secret across the cut would not be
    recognised in either half, and its first half would stay in Temporal's history."""
    return {
        "content": redact(message.content)[:REPLY_TEXT_CAP],
        "stop_reason": message.stop_reason,
        "error": message.error,
        "calls": [[call.id, call.name] for call in message.tool_calls],
        "exclusive": [call.id for call in message.tool_calls if call.name in exclusive],
        "model": message.model,
        "provider": message.provider,
    }


def reply_from_wire(data: dict[str, Any]) -> crab.messages.AssistantMessage:
    return crab.messages.AssistantMessage(
        content=str(data.get("content", "")),
        tool_calls=tuple(crab.messages.ToolCall(str(cid), str(name), {}) for cid, name in data.get("calls", [])),
        stop_reason=data.get("stop_reason", "end"),
        error=data.get("error"),
        model=data.get("model"),
        provider=data.get("provider"),
    )


def exclusive_calls(data: dict[str, Any]) -> dict[str, bool]:
    """The calls of a reply whose tools run alone."""
    return {str(call_id): True for call_id in data.get("exclusive", [])}


def user_to_wire(message: crab.messages.Message) -> dict[str, Any]:
    """A message the machine records (a prompt, a hook's context, a note) as stored."""
    return crab.messages.message_to_dict(message)


def user_from_wire(data: dict[str, Any]) -> crab.messages.Message:
    return crab.messages.message_from_dict(data)
