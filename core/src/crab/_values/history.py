"""Turning stored entries into the message history a provider may see, repaired: every call gets
exactly one result, aborted replies stay out, context starts at the last handoff (``repair``,
``stand_ins``; docs/architecture.md#invariants-the-tests-hold-the-code-to). Pure functions of the
contracts' values, so ``_values``': the loop's turn, recorder and sessions, and crab.Agent's history
as data, all read a session through them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crab._contracts.messages import AssistantMessage, Message, ToolResultMessage
from crab._contracts.storage import Entry
from crab._values.compaction_text import carried
from crab._values.message_json import message_from_dict

NO_RESULT = "No result provided: the session ended before this tool call finished."
INTERRUPTED = "Task interrupted before this tool finished."
SKIPPED = "Skipped due to queued user message."
STOPPED = "Interrupted: crab was stopped before this tool call finished."
"""The stand-in result a resume stores for a call left without one (see ``stand_ins``)."""
NO_REPLY = "(no reply: the previous turn was interrupted before the model answered)"
"""Recorded as the reply of a turn that got none, before the next prompt (roles alternate)."""


@dataclass(frozen=True)
class History:
    """Messages for the model plus the state of the handoff anchor they start from, if any."""

    messages: list[Message]
    handoff: Mapping[str, Any] | None = None
    skipped: int = field(default=0)
    missing: tuple[ToolResultMessage, ...] = ()
    """Stand-in results for stored calls that have none in the store (``stand_ins``); already
    placed in ``messages``, not yet stored."""


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
            kept, bad = carried(entry.payload)  # a compaction anchor carries its verbatim tail
            messages.extend(kept)
            unreadable += bad
    return messages, handoff, unreadable


def repair(messages: Sequence[Message]) -> list[Message]:
    """The replayable, paired, alternating version of ``messages`` (run on every resume and request).

    Aborted or failed assistant messages stay in storage but out of context; every tool call gets
    exactly one result, directly after its message (a synthetic error result where none was
    recorded); orphan and duplicate results are dropped. A call the store holds no result for (crab
    was killed while it ran) gets a stand-in written on resume (``stand_ins``); a real one stored
    later wins. Nothing else is inserted or moved, so a resumed context is byte for byte the one
    the live session sent: a user message left without a reply is followed by the ``NO_REPLY``
    the next turn records (``crab._loop.turn``), and several user messages in a row (a prompt and
    the context and notes recorded after it) stay as they are.

    Pairing is by id first: a call's result is the first unused result with its id stored after
    the call's message, wherever it landed (concurrent writers interleave replies and results).
    Only an id that several calls share (servers that number calls ``call_0`` per reply) is
    paired by position: each such call first takes a result between its message and the next
    replayable assistant message, before any call may take one from further on. A stored result
    is never replaced by a synthetic one while a call with its id lacks one.
    """
    paired = _pair(messages)
    out: list[Message] = []
    for index, message in enumerate(messages):
        if isinstance(message, ToolResultMessage):
            continue  # placed right after the message that asked for it
        if isinstance(message, AssistantMessage):
            if message.replayable:
                out.append(message)
                for position, call in enumerate(message.tool_calls):
                    found = paired.get((index, position))
                    out.append(
                        found or ToolResultMessage(call_id=call.id, name=call.name, content=NO_RESULT, is_error=True)
                    )
            continue
        out.append(message)
    return out


def _pair(messages: Sequence[Message]) -> dict[tuple[int, int], ToolResultMessage]:
    """``(message index, call position) -> stored result`` for every call that has one."""
    calls: list[tuple[int, int, str]] = []  # (message index, call position, call id)
    window_end: dict[int, int] = {}
    last_replayable: int | None = None
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage) and message.replayable:
            if last_replayable is not None:
                window_end[last_replayable] = index
            last_replayable = index
            calls.extend((index, position, call.id) for position, call in enumerate(message.tool_calls))
    if last_replayable is not None:
        window_end[last_replayable] = len(messages)
    results: dict[str, list[tuple[int, ToolResultMessage]]] = {}
    for index, message in enumerate(messages):
        if isinstance(message, ToolResultMessage):
            results.setdefault(message.call_id, []).append((index, message))
    for found in results.values():
        found.sort(key=lambda item: is_stand_in(item[1]))  # stable: real results first, in order
    shared = Counter(call_id for _, _, call_id in calls)
    used: set[int] = set()
    paired: dict[tuple[int, int], ToolResultMessage] = {}

    def take(index: int, position: int, call_id: str, end: int) -> None:
        found = next(((r, m) for r, m in results.get(call_id, ()) if index < r < end and r not in used), None)
        if found is not None:
            used.add(found[0])
            paired[index, position] = found[1]

    for index, position, call_id in calls:  # ids several calls share: by position first
        if shared[call_id] > 1:
            take(index, position, call_id, window_end[index])
    for index, position, call_id in calls:  # then by id, anywhere after the call
        if (index, position) not in paired:
            take(index, position, call_id, len(messages))
    return paired


def is_stand_in(message: ToolResultMessage) -> bool:
    """True for the result a resume stored for a call crab was stopped in (``STOPPED``)."""
    return message.is_error and message.content == STOPPED


def stand_ins(messages: Sequence[Message]) -> list[ToolResultMessage]:
    """A ``STOPPED`` result for every call of a replayable message in ``messages`` that has no
    stored result (``repair`` would give it a synthetic one), in call order."""
    paired = _pair(messages)
    missing: list[ToolResultMessage] = []
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage) and message.replayable:
            for position, call in enumerate(message.tool_calls):
                if (index, position) not in paired:
                    missing.append(ToolResultMessage(call.id, call.name, STOPPED, is_error=True))
    return missing


def build_context(entries: Iterable[Entry]) -> list[Message]:
    """The repaired message history for a list of entries (usually ``since_handoff=True``)."""
    messages, _, _ = messages_from_entries(entries)
    return repair(messages)


def load_history(entries: Iterable[Entry]) -> History:
    """Like ``build_context`` but also returns the handoff state, the unreadable count and the
    stand-in results the store lacks (placed in the messages as the store will hold them)."""
    messages, handoff, unreadable = messages_from_entries(entries)
    missing = stand_ins(messages)
    return History(messages=repair([*messages, *missing]), handoff=handoff, skipped=unreadable, missing=tuple(missing))


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
