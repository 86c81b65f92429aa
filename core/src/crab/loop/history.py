"""Turning stored entries into the message history a provider may see, repaired.

Repairs (run on every resume and before every request): aborted or failed assistant messages
stay in storage but out of context; every tool call gets exactly one result, directly after its
message (a synthetic error result where none was recorded); orphan and duplicate results are
dropped; a user message left without a reply gets a synthetic assistant reply so roles alternate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crab.messages import AssistantMessage, Message, ToolResultMessage, UserMessage, message_from_dict
from crab.storage import Entry

NO_RESULT = "No result provided: the session ended before this tool call finished."
INTERRUPTED = "Task interrupted before this tool finished."
SKIPPED = "Skipped due to queued user message."
NO_REPLY = "(no reply: the previous turn was interrupted before the model answered)"


@dataclass(frozen=True)
class History:
    """Messages for the model plus the state of the handoff anchor they start from, if any."""

    messages: list[Message]
    handoff: Mapping[str, Any] | None = None
    skipped: int = field(default=0)


def messages_from_entries(entries: Iterable[Entry]) -> tuple[list[Message], Mapping[str, Any] | None, int]:
    """Messages in entry order, the last handoff anchor's payload, and how many entries were unreadable."""
    messages: list[Message] = []
    handoff: Mapping[str, Any] | None = None
    unreadable = 0
    for entry in entries:
        if entry.type in ("message", "tool_result"):
            try:
                messages.append(message_from_dict(dict(entry.payload)))
            except (KeyError, TypeError, ValueError):
                unreadable += 1
        elif entry.type == "anchor" and entry.payload.get("kind") == "handoff":
            messages.clear()
            handoff = entry.payload
    return messages, handoff, unreadable


def repair(messages: Sequence[Message]) -> list[Message]:
    """The replayable, paired, alternating version of ``messages`` (see module docstring).

    A call's result is looked for between its message and the next replayable assistant message,
    first unused match by id: providers that reuse ids across replies (``call_0``) still pair.
    """
    out: list[Message] = []
    used: set[int] = set()
    for index, message in enumerate(messages):
        if isinstance(message, ToolResultMessage):
            continue  # placed right after the message that asked for it
        if isinstance(message, AssistantMessage):
            if message.replayable:
                out.append(message)
                out.extend(_results_for(message, index, messages, used))
            continue
        if out and isinstance(out[-1], UserMessage):
            out.append(AssistantMessage(content=NO_REPLY))
        out.append(message)
    return out


def _results_for(
    message: AssistantMessage, index: int, messages: Sequence[Message], used: set[int]
) -> list[ToolResultMessage]:
    window: list[tuple[int, ToolResultMessage]] = []
    for later in range(index + 1, len(messages)):
        candidate = messages[later]
        if isinstance(candidate, AssistantMessage) and candidate.replayable:
            break
        if isinstance(candidate, ToolResultMessage) and later not in used:
            window.append((later, candidate))
    results: list[ToolResultMessage] = []
    for call in message.tool_calls:
        match = next(((j, r) for j, r in window if j not in used and r.call_id == call.id), None)
        if match is None:
            results.append(ToolResultMessage(call_id=call.id, name=call.name, content=NO_RESULT, is_error=True))
        else:
            used.add(match[0])
            results.append(match[1])
    return results


def build_context(entries: Iterable[Entry]) -> list[Message]:
    """The repaired message history for a list of entries (usually ``since_handoff=True``)."""
    messages, _, _ = messages_from_entries(entries)
    return repair(messages)


def load_history(entries: Iterable[Entry]) -> History:
    """Like ``build_context`` but also returns the handoff state and the unreadable count."""
    messages, handoff, unreadable = messages_from_entries(entries)
    return History(messages=repair(messages), handoff=handoff, skipped=unreadable)


def unpaired_calls(messages: Sequence[Message]) -> list[str]:
    """Ids of tool calls in replayable assistant messages that lack exactly one result after them.

    Empty for any output of ``repair``; tests use it to check the pairing invariant.
    """
    problems: list[str] = []
    for i, message in enumerate(messages):
        if not isinstance(message, AssistantMessage) or not message.tool_calls:
            continue
        following: list[str] = []
        for later in messages[i + 1 :]:
            if not isinstance(later, ToolResultMessage):
                break
            following.append(later.call_id)
        for call in message.tool_calls:
            if following.count(call.id) != 1:
                problems.append(call.id)
    return problems
