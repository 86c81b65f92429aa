"""History as data for the library: a session's whole conversation as typed messages with its
anchors marked (``crab.Agent.history``), and messages to and from JSON (``crab.messages.messages_to_json``,
``crab.messages.messages_from_json``) in the versioned form the stores keep (docs/format.md)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crab._contracts.errors import UsageError
from crab._contracts.messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from crab._contracts.storage import Entry
from crab._values.message_json import message_from_dict, message_to_dict
from crab._values.utf8 import json_text

MESSAGE_TYPES = (UserMessage, AssistantMessage, ToolResultMessage)


@dataclass(frozen=True, slots=True)
class HistoryAnchor:
    """A mark in a session's history: a compaction (``compaction`` True: the model saw ``summary``
    instead of what came before; the messages after it are what it kept) or another handoff."""

    name: str
    kind: str
    summary: str = ""
    compaction: bool = False
    details: Mapping[str, Any] = field(default_factory=dict)


HistoryItem = Message | HistoryAnchor
"""One item of ``crab.Agent.history``: a message, or an anchor between them."""


def history_items(entries: Iterable[Entry]) -> list[HistoryItem]:
    """Every message of ``entries`` in order, each anchor where it was set; unreadable entries skipped."""
    items: list[HistoryItem] = []
    for entry in entries:
        if entry.type in ("message", "tool_result"):
            try:
                items.append(message_from_dict(dict(entry.payload)))
            except (KeyError, TypeError, ValueError):
                continue
        elif entry.type == "anchor":
            payload = entry.payload
            state = payload.get("state")
            summary = state.get("summary", "") if isinstance(state, Mapping) else ""
            details = payload.get("compaction")
            items.append(
                HistoryAnchor(
                    name=str(payload.get("name", "")),
                    kind=str(payload.get("kind", "")),
                    summary=str(summary),
                    compaction=isinstance(details, Mapping),
                    details=dict(details) if isinstance(details, Mapping) else {},
                )
            )
    return items


def messages_to_json(messages: Sequence[Message], *, indent: int | None = None) -> str:
    """``messages`` as a JSON array of their versioned objects, images inlined (base64), so the
    text alone restores them (``messages_from_json``)."""
    return json_text([message_to_dict(m, inline_images=True) for m in checked(messages)], indent=indent)


def messages_from_json(text: str | bytes) -> list[Message]:
    """The messages of a JSON array ``messages_to_json`` wrote; ``UsageError`` naming what is wrong."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"the messages are not JSON ({exc})") from None
    except RecursionError:  # json.loads recurses into nested arrays and objects
        raise UsageError("the messages are nested too deep to read; no message of crab's nests like that") from None
    if not isinstance(data, list):
        raise UsageError(f"the messages must be a JSON array, not {type(data).__name__}")
    messages: list[Message] = []
    for index, item in enumerate(data):
        try:
            messages.append(message_from_dict(item))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UsageError(f"message {index} cannot be read: {exc}") from None
    return messages


def checked(messages: Iterable[Any]) -> list[Message]:
    """``messages`` as a list, ``UsageError`` naming the first item that is not a crab message."""
    items = list(messages)
    for index, item in enumerate(items):
        if not isinstance(item, MESSAGE_TYPES):
            raise UsageError(
                f"message_history[{index}] is a {type(item).__name__}, not a crab message "
                "(UserMessage, AssistantMessage, ToolResultMessage; crab.messages.messages_from_json reads JSON)"
            )
    return items
